"""The load generator's own error judged against what its phase measured (issue 24):
its delay against the TTFT p50, sends held past their schedule, an open loop's achieved
vs target rate. Each rule on readings built from the figures the review measured, and
from the demo's, which must stay unflagged."""

from __future__ import annotations

import json

import pytest

from harness.config.decision import deviations
from harness.config.loader import parse_config
from harness.loadgen.health import HealthBounds, HealthReading, PhaseHealth, judge

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"


def lags_ms(mean_like: float, n: int = 200, tail: float | None = None,
            tail_n: int = 0) -> list[float]:
    """n loop-lag samples (s): `mean_like` ms each, the last `tail_n` at `tail` ms."""
    body = [mean_like / 1000.0] * (n - tail_n)
    return body + [(tail or 0.0) / 1000.0] * tail_n


def reading(lag: list[float], ttft_ms: float | None, **more: object) -> HealthReading:
    return HealthReading(wall_s=10.0, loop_lag_s=lag, process_cpu_s=1.0,
                         ttft_p50_s=None if ttft_ms is None else ttft_ms / 1000.0,
                         **more)  # type: ignore[arg-type]


def client_reasons(h: PhaseHealth) -> list[str]:
    return [r for r in h.reasons if r.startswith("client delay")]


def test_a_tail_of_client_delay_past_the_ttft_it_measured_is_flagged() -> None:
    """The review's 3000 req/s phase: loop lag p99 4.3 ms against a TTFT p50 of 1.7 ms."""
    lag = lags_ms(0.05, tail=4.3, tail_n=3)
    h = judge(reading(lag, 1.7), HealthBounds())
    assert h.loop_lag_p99_ms == pytest.approx(4.3)
    assert h.client_tail_share == pytest.approx(4.3 / 1.7, rel=1e-3)
    assert client_reasons(h) == [
        "client delay p99 4.3 ms (event-loop lag) is 253% of the TTFT p50 1.7 ms it "
        "measured (> 100%)"]
    assert h.saturated and h.ttft_p50_ms == 1.7
    # the same client against what a real engine takes: nothing to say
    calm = judge(reading(lag, 300.0), HealthBounds())
    assert not calm.saturated and calm.client_tail_share == pytest.approx(4.3 / 300, abs=1e-4)


def test_a_mean_client_delay_past_a_tenth_of_the_ttft_is_flagged() -> None:
    """The review's starved client at c=64 against a no-op server: TTFT p50 ~78 ms while
    its loop was late 12 ms on average (p99 75 ms, under the absolute 100 ms)."""
    lag = lags_ms(8.0, tail=75.0, tail_n=20)
    h = judge(reading(lag, 78.5), HealthBounds())
    assert h.loop_lag_p99_ms is not None and h.loop_lag_p99_ms < 100  # absolute: silent
    assert h.loop_lag_mean_ms == pytest.approx(0.9 * 8 + 0.1 * 75)
    assert client_reasons(h) == [
        "client delay 15 ms (mean event-loop lag) is 19% of the TTFT p50 78 ms it measured "
        "(> 10%)"]
    assert not judge(reading(lag, 78.5), HealthBounds(max_client_delay_share=0.2)).saturated


def test_the_demos_busy_machine_figures_stay_unflagged() -> None:
    """The worst G3 measured phase of `gate demo` at load 3 on 2 cores: TTFT p50 12 ms,
    loop lag mean 0.72 ms (6 %), p99 4.8 ms (40 %); and its worst tail, 6.8 ms against
    14 ms (49 %)."""
    worst_mean = judge(reading(lags_ms(0.6, n=66, tail=4.8, tail_n=2), 12.0), HealthBounds())
    worst_tail = judge(reading(lags_ms(0.55, n=67, tail=6.8, tail_n=2), 14.0), HealthBounds())
    for h in (worst_mean, worst_tail):
        assert not h.saturated, h.reasons
        assert h.client_delay_share is not None and h.client_delay_share < 0.1
        assert h.client_tail_share is not None and h.client_tail_share < 1.0


def test_no_ttft_means_no_relative_judgement() -> None:
    """Every request failed (no TTFT): the absolute bounds still speak, the relative
    ones have nothing to compare with."""
    h = judge(reading(lags_ms(5.0), None), HealthBounds())
    assert h.ttft_p50_ms is None and h.client_delay_share is None and not h.saturated


def open_loop(n: int, target_span: float, sent_span: float, *, capped: int = 0,
              late_tail: float = 0.0) -> HealthReading:
    """An open loop of n sends due over target_span s that went out over sent_span s,
    each later than the one before (the last `late_tail` s behind)."""
    lags = [late_tail * i / (n - 1) for i in range(n)]
    return HealthReading(wall_s=sent_span + 0.01, loop_lag_s=lags_ms(0.1),
                         ttft_p50_s=0.5, send_lag_s=lags, open_loop=True,
                         concurrency=64, capped_sends=capped,
                         scheduled_span_s=target_span, sent_span_s=sent_span)


def test_an_open_loop_that_falls_short_of_its_rate_is_flagged_naming_both() -> None:
    """The review's 5000 req/s phase that reached 3512 with 0 late sends: 10 000 sends
    due over 2 s took 2.847 s, each later than the last."""
    h = judge(open_loop(10_000, 2.0, 2.847, late_tail=0.847), HealthBounds())
    assert h.target_rate == pytest.approx(5000) and h.achieved_rate == pytest.approx(3512.5, 0.01)
    assert ("open loop sent 3512 req/s, 70% of the target 5000 req/s (short by more than "
            "5%; the last send 0.85 s behind its schedule)") in h.reasons
    # late against the schedule, not against a slot: most of them count
    late = next(r for r in h.reasons if "after their scheduled time" in r)
    assert late.startswith(f"{h.late_sends} of 10000 requests sent more than 50 ms after")
    assert late.endswith("no slot was full: the event loop held them")
    capped = judge(open_loop(10_000, 2.0, 2.847, capped=7000, late_tail=0.847),
                   HealthBounds())
    assert capped.held_by_cap == 7000
    assert any(r.endswith("7000 of the sends found all 64 slots busy: the concurrency cap "
                          "held them") for r in capped.reasons)


def test_an_open_loop_on_its_rate_is_not_flagged() -> None:
    on_time = judge(open_loop(10_000, 2.0, 2.004, late_tail=0.004), HealthBounds())
    assert not on_time.saturated and on_time.late_sends == 0
    assert on_time.achieved_rate == pytest.approx(4990, rel=1e-3)
    # three sends 10 ms behind a 60 ms schedule: short by 14 %, but by less than a late
    # send: no shortfall to speak of
    short = judge(open_loop(3, 0.06, 0.07, late_tail=0.01), HealthBounds())
    assert short.achieved_rate is not None and short.achieved_rate < 0.9 * 50
    assert not short.saturated


def test_a_closed_loop_keeps_its_slot_based_late_sends() -> None:
    h = judge(HealthReading(wall_s=1.0, send_lag_s=[0.06] * 3 + [0.0] * 7, ttft_p50_s=0.2),
              HealthBounds())
    assert h.reasons == ("3 of 10 requests sent more than 50 ms late (30% > 5%)",)
    assert h.target_rate is None and not h.open_loop


def test_health_without_the_new_keys_reads_back_with_their_defaults() -> None:
    """A record or an agent from before issue 24 sends no relative fields or bounds."""
    old = {"loop_lag_p50_ms": 0.2, "loop_lag_p99_ms": 3.0, "loop_lag_max_ms": 4.0,
           "loop_samples": 70, "process_cpu": 0.1, "host_cpu": 0.9, "sends": 60,
           "late_sends": 0, "late_share": 0.0, "send_lag_p99_ms": 0.5,
           "sim_lag_max_s": None, "sim_lag_mean_ms": None, "reasons": [], "saturated": False,
           "bounds": {"max_loop_lag_p99_ms": 100.0, "late_after_ms": 50.0,
                      "max_late_share": 0.05, "max_process_cpu": 0.95, "max_host_cpu": 1.0,
                      "max_sim_lag_share": 0.25}}
    h = PhaseHealth.from_dict(old)
    assert h.bounds == HealthBounds() and h.ttft_p50_ms is None and not h.saturated
    new = judge(open_loop(100, 1.0, 1.5, late_tail=0.5), HealthBounds())
    assert PhaseHealth.from_dict(json.loads(json.dumps(new.to_dict()))) == new
    assert HealthBounds.from_dict({"max_rate_shortfall": 0.01, "unknown_later": 3}) == \
        HealthBounds(max_rate_shortfall=0.01)


def test_looser_relative_bounds_weaken_g3_and_tighter_ones_do_not() -> None:
    cfg, _ = parse_config(BASE + "load: {health: {max_client_delay_share: 0.2,\n"
                          "  max_client_tail_share: 0.5, max_rate_shortfall: 0.5}}\n",
                          "site/gate.yaml")
    found = {d.key: d for d in deviations(cfg.model_dump(mode="json"))}
    assert found["load.health.max_client_delay_share"].weakened
    assert not found["load.health.max_client_tail_share"].weakened
    assert found["load.health.max_rate_shortfall"].weakened
    assert HealthBounds.from_dict(cfg.load.health.model_dump()) == HealthBounds(
        max_client_delay_share=0.2, max_client_tail_share=0.5, max_rate_shortfall=0.5)
