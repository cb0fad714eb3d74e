"""G4's second clock (harness/g4/engine_clock.py, clock_check.py): the engines' own
counters, scraped by the gate, held against the soak's windows. A soak whose window files
say TTFT stayed flat while the engines' histogram rose is STOP-LOSS by the engines'
clock; one that reports a TTFT below the engines' own, or requests they never ended, is
INCONCLUSIVE; an engine without a histogram leaves a client-host soak needing a sign-off.
Scrapes are parsed from the simulator's real /metrics text (harness.sim.metrics) and a
captured vLLM exposition."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from harness.g4 import engine_clock
from harness.g4.clock_check import engine_clock as judge_clock
from harness.g4.criteria import Criteria, drifts, judge
from harness.loadgen.soak_windows import ClientClock, EngineClock, Evidence, Window
from harness.probes.prometheus import parse_metrics
from harness.verdict import Verdict

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "prom" / \
    "vllm-metrics_er0080_v0.25.1_idle.prom"
WINDOW = 600.0
KV = 262144.0


def windows(n: int = 144, *, engine_ttft_per_h: float = 0.0, soak_ttft_per_h: float = 0.0,
            engine_requests: float = 1000.0, scale_soak_ttft: float = 1.0,
            engine: bool = True, sampled_every: int = 1) -> list[Window]:
    """A day of 10-minute windows: the soak's words and the engines' counts, as each
    clock would see one steady stack (changed one way at a time)."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        h = (i + 0.5) * WINDOW / 3600
        noise = 1 + 0.01 * rng.standard_normal()
        engine_ttft = 0.5 * (1 + engine_ttft_per_h * h) * noise
        soak_ttft = 0.52 * (1 + soak_ttft_per_h * h) * noise * scale_soak_ttft
        clock = EngineClock(ttft_sum_s=engine_ttft * 1000, ttft_count=1000.0,
                            requests=engine_requests, generation_tokens=64000.0,
                            hit_tokens=4.0e5) if engine and i % sampled_every == 0 else None
        ev = Evidence(external_hit_tokens=4.0e5, device_read_bytes=4.0e5 * KV,
                      engine_rss_bytes=20e9, engine_clock=clock)
        out.append(Window(index=i, start_s=i * WINDOW, length_s=WINDOW, requests=1000,
                          ttft_p50_s=soak_ttft, ttft_p99_s=2 * soak_ttft,
                          output_tokens=64000, evidence=ev,
                          clock=ClientClock(first_tokens=1000, ttft_sum_s=soak_ttft * 1000,
                                            completed=1000, ended=1000)))
    return out


def by_name(ws: list[Window], client: bool = True) -> dict[str, tuple[Verdict, str]]:
    return {j.criterion: (j.verdict, j.text)
            for j in judge(ws, Criteria(), KV, client_placement=client)}


def test_two_clocks_that_agree_pass() -> None:
    got = by_name(windows())
    assert got["engine_clock"] == (Verdict.PASS, "the engines' own clock agrees with the "
                                   "soak in 143 of 144 windows (TTFT, requests)")
    assert got["ttft_drift"][0] is Verdict.PASS


def test_a_flat_ttft_the_engines_did_not_show_is_stop_loss_by_their_clock() -> None:
    # the soak's files say flat; the engines' histogram rose 1 % an hour (+24 % a day),
    # and the soak's mean now sits below theirs: both clocks' rules catch it
    got = by_name(windows(engine_ttft_per_h=0.01))
    verdict, text = got["ttft_drift"]
    assert verdict is Verdict.STOP_LOSS and text.startswith(
        "by the engines' own clock: TTFT p50 drift: "), text
    verdict, text = got["engine_clock"]
    assert verdict is Verdict.INCONCLUSIVE and "below the engines' own" in text, text


def test_a_drift_both_clocks_show_is_said_as_the_soaks() -> None:
    got = by_name(windows(engine_ttft_per_h=0.01, soak_ttft_per_h=0.01))
    assert got["ttft_drift"][0] is Verdict.STOP_LOSS
    assert got["ttft_drift"][1].startswith("TTFT p50 drift: "), got["ttft_drift"]
    assert got["engine_clock"][0] is Verdict.PASS


def test_a_client_faster_than_the_engine_is_inconclusive_naming_the_window() -> None:
    j = judge_clock(windows(scale_soak_ttft=0.7), client_placement=True)
    assert j.verdict is Verdict.INCONCLUSIVE and j.window == 1
    assert j.text.startswith("window 2: the soak's mean TTFT "), j.text
    assert "is below the engines' own " in j.text


@pytest.mark.parametrize("seen", [0.0, 900.0, 1100.0])
def test_requests_the_engines_did_not_end_are_inconclusive(seen: float) -> None:
    j = judge_clock(windows(engine_requests=seen), client_placement=False)
    assert j.verdict is Verdict.INCONCLUSIVE and "did not go (only) to the engines" in j.text


def test_an_engine_without_a_histogram_needs_a_signoff_only_on_the_client_host() -> None:
    ws = windows(engine=False)
    on_client = judge_clock(ws, client_placement=True)
    assert (on_client.verdict, on_client.signoff) == (Verdict.INCONCLUSIVE, True)
    local = judge_clock(ws, client_placement=False)
    assert local.verdict is Verdict.PASS and "load.placement: local" in local.text
    # and the drifts are the soak's alone, as before
    assert [j.verdict for j in drifts(ws, Criteria())][:2] == [Verdict.PASS, Verdict.PASS]


def test_too_few_windows_compared_is_inconclusive() -> None:
    j = judge_clock(windows(sampled_every=3), client_placement=True)
    assert j.verdict is Verdict.INCONCLUSIVE and "in 47 of 144 windows" in j.text


def test_a_soak_that_wrote_no_client_clock_is_not_compared() -> None:
    ws = [replace(w, clock=None) for w in windows()]
    assert judge_clock(ws, client_placement=True).verdict is Verdict.INCONCLUSIVE


def test_readings_of_a_captured_vllm_exposition() -> None:
    """vLLM 0.25.1's /metrics (tests/fixtures/prom, SOURCES.md): every series found, from
    the first engine family that exposes it; an exposition without them gives none."""
    text = CAPTURED.read_text()
    idle = engine_clock.readings(parse_metrics(text))
    assert set(idle) == set(engine_clock.SERIES) and idle[engine_clock.TTFT_COUNT] == 0.0
    busy = text.replace('vllm:time_to_first_token_seconds_count{engine="0",model_name='
                        '"opt-125m-tp2"} 0.0', 'vllm:time_to_first_token_seconds_count{engine='
                        '"0",model_name="opt-125m-tp2"} 42.0')
    assert engine_clock.readings(parse_metrics(busy))[engine_clock.TTFT_COUNT] == 42.0
    assert engine_clock.readings(parse_metrics("process_start_time_seconds 1.0\n")) == {}


def test_per_window_reads_each_series_rise_between_the_edges() -> None:
    series = {engine_clock.TTFT_SUM: {"a": [(100.0, 0.0), (110.0, 5.0), (120.0, 20.0)]},
              engine_clock.TTFT_COUNT: {"a": [(100.0, 0.0), (110.0, 10.0), (120.0, 20.0)]}}
    first, second = engine_clock.per_window(series, 100.0, 10.0, 2, max_gap_s=20.0)
    assert first is not None and first.ttft_mean_s == pytest.approx(0.5)
    assert second is not None and second.ttft_mean_s == pytest.approx(1.5)
    assert first.requests is None  # no e2e series: not exposed
    assert engine_clock.per_window({}, 100.0, 10.0, 2, max_gap_s=20.0) == [None, None]


def test_a_viewer_back_after_the_soak_ended_spreads_the_gap_up_to_the_end() -> None:
    """Samples every quarter window for 4 windows, then none until 4 s after the soak's
    16th window ended (a killed viewer, resumed): the gap's requests belong to windows
    5-16, not thinned by the idle time after the end, and are judged as one group."""
    samples = [(100.0 + t / 4, 10.0 * t) for t in range(17)]  # 40 requests a window
    samples.append((120.0, 640.0))  # 16 windows x 40, read 4 s after the end
    series = {engine_clock.REQUESTS: {"e": samples}}
    got = engine_clock.per_window(series, 100.0, 1.0, 16, max_gap_s=2.0, ended_at=116.0)
    assert [round(c.requests or 0) for c in got if c] == [40] * 16
    assert {c.spread_from for c in got[4:] if c} == {4} and got[0] and not got[0].spread_from
    thinned = engine_clock.per_window(series, 100.0, 1.0, 16, max_gap_s=2.0)
    assert thinned[10] is not None and round(thinned[10].requests or 0) == 30
