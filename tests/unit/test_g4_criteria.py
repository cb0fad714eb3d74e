"""G4's judgement of a soak's windows (harness/g4): requests cut into windows by send time,
tokens by completion; drifts fitted as slopes with intervals after the first hour; and the
accelerator held to have done the work in every window. A stack that drifted, restarted,
failed or fell back to recompute is STOP-LOSS naming the criterion and the window; too
few windows to fit a trend is INCONCLUSIVE; nothing here can PASS by default."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.g4.criteria import Criteria, judge
from harness.g4.trend import drift
from harness.loadgen.records import RequestRecord
from harness.loadgen.soak_windows import Evidence, Window, cut
from harness.reasons import CODES
from harness.report.i18n import translator
from harness.report.reasons import say
from harness.verdict import Verdict

KV = 262144.0  # bytes of KV per token (Qwen2.5-32B, bf16)
WINDOW = 600.0  # 10-minute windows: 6 per hour


def rec(i: int, sent: float, *, ttft: float = 0.5, e2el: float = 2.0, tokens: int = 16,
        error: str | None = None, warmup: bool = False) -> RequestRecord:
    return RequestRecord(idx=i, instance=0, doc_id=i, warmup=warmup, scheduled=sent,
                         sent=sent, ttft=None if error else ttft,
                         e2el=None if error else e2el, output_tokens=None if error else tokens,
                         error_kind=error)


def test_windows_take_requests_by_send_time_and_tokens_by_completion() -> None:
    records = [rec(0, 1.0), rec(1, 9.5, e2el=1.0), rec(2, 3.0, error="http_500"),
               rec(3, 2.0, warmup=True), rec(4, 25.0)]  # past the last window: left out
    w0, w1 = cut(records, 10.0, 2)
    assert (w0.requests, w0.failed, w0.errors) == (3, 1, {"http_500": 1})
    assert w0.output_tokens == 16  # request 1 completed at 10.5 s: its tokens are w1's
    assert (w1.requests, w1.output_tokens) == (0, 16)
    assert w0.ttft_p50_s == 0.5 and w0.tpot_p50_s == pytest.approx((1.5 / 15 + 0.5 / 15) / 2)
    assert w0.throughput_tps == pytest.approx(1.6) and w1.mid_h == pytest.approx(15 / 3600)
    with pytest.raises(ValueError):
        cut(records, 0.0, 2)


def test_a_trend_is_a_slope_with_an_interval_as_a_share_of_the_first_hour() -> None:
    hours = [(i + 0.5) / 6 for i in range(6 * 12)]  # 12 h of 10-minute windows
    rng = np.random.default_rng(1)
    flat = [1.0 + 0.01 * rng.standard_normal() for _ in hours]
    d = drift(hours, flat, baseline_h=1.0, confidence=0.95)
    assert d is not None and d.lo < 0 < d.hi and abs(d.change) < 0.02
    rising = [1.0 + 0.2 * h / 24 for h in hours]  # +20 % per 24 h, exactly
    d = drift(hours, rising, baseline_h=1.0, confidence=0.95)
    assert d is not None and d.change == pytest.approx(0.2 / d.level, rel=1e-6)
    assert d.lo == pytest.approx(d.hi, rel=1e-6)  # a perfect line: no spread
    assert drift(hours[:8], flat[:8], baseline_h=1.0, confidence=0.95) is None  # 2 after h1
    assert drift(hours, [None] * len(hours), baseline_h=1.0, confidence=0.95) is None


def soak(hours: float = 24.0, *, ttft: float = 0.5, ttft_per_h: float = 0.0,
         fail_at: int | None = None, restart_at: int | None = None,
         fallback_at: int | None = None, rss_per_h: float = 0.0,
         reads_share: float = 1.0) -> list[Window]:
    """A steady soak's windows, with one thing changed."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(int(hours * 3600 / WINDOW)):
        h = (i + 0.5) * WINDOW / 3600
        hits = 0.0 if fallback_at is not None and i >= fallback_at else 4.0e5
        ev = Evidence(external_hit_tokens=hits, device_read_bytes=hits * KV * reads_share,
                      engine_rss_bytes=20e9 * (1 + rss_per_h * h),
                      engine_restarts=1 if i == restart_at else 0)
        t = (ttft + ttft_per_h * h) * (1 + 0.01 * rng.standard_normal())
        errors = {"http_500": 20} if i == fail_at else {}
        out.append(Window(index=i, start_s=i * WINDOW, length_s=WINDOW, requests=1000,
                          errors=errors, ttft_p50_s=t, ttft_p99_s=2 * t,
                          output_tokens=int(64000 * (1 + 0.01 * rng.standard_normal())),
                          evidence=ev))
    return out


def by_criterion(windows: list[Window]) -> dict[str, tuple[Verdict, int | None, str]]:
    return {j.criterion: (j.verdict, j.window, j.text) for j in judge(windows, Criteria(), KV)}


def test_a_steady_soak_passes_every_criterion() -> None:
    got = by_criterion(soak())
    assert {k: v[0] for k, v in got.items()} == dict.fromkeys(
        ("error_rate", "ttft_drift", "throughput_drift", "memory_growth", "restarts",
         "engaged", "engine_clock"), Verdict.PASS)
    assert got["engaged"][2] == "the accelerator engaged in all 144 windows"


@pytest.mark.parametrize(("change", "criterion", "window", "words"), [
    ({"fail_at": 20}, "error_rate", 20, "window 21: 2.0% of requests failed (> 1.0%: "
                                        "http_500 20)"),
    ({"restart_at": 11}, "restarts", 11, "window 12: the engine restarted (1 > 0)"),
    ({"fallback_at": 24}, "engaged", 24, "accelerator not engaged in window 25: no "
                                         "external-tier hits"),
    ({"reads_share": 0.1}, "engaged", 0, "accelerator not engaged in window 1: the devices "
                                         "read 10.49 GB, 10% of the 104.86 GB its hits stand "
                                         "for (< 50%)"),
    ({"ttft_per_h": 0.005}, "ttft_drift", None, "TTFT p50 drift: 2"),  # +24 % per 24 h
    ({"rss_per_h": 0.01}, "memory_growth", None, "engine memory growth: 2"),  # +24 %
])
def test_each_miss_is_stop_loss_naming_its_criterion_and_window(
        change: dict[str, float], criterion: str, window: int | None, words: str) -> None:
    verdict, at, text = by_criterion(soak(**change))[criterion]
    assert (verdict, at) == (Verdict.STOP_LOSS, window), text
    assert text.startswith(words), text


def test_a_soak_that_never_engaged_or_was_never_sampled_is_never_pass() -> None:
    never = [Window(index=i, start_s=i * WINDOW, length_s=WINDOW, requests=100,
                    ttft_p50_s=0.5, output_tokens=6400) for i in range(12)]
    verdict, at, text = by_criterion(never)["engaged"]
    assert (verdict, at) == (Verdict.STOP_LOSS, 0)
    assert "not sampled" in text
    (only,) = judge([], Criteria(), KV)
    assert only.verdict is Verdict.ERROR and only.text == "no window was measured"


def test_too_short_a_soak_for_a_trend_is_inconclusive_not_pass() -> None:
    got = by_criterion(soak(hours=1.3))  # 7 windows, 1 after the first hour
    assert got["ttft_drift"][0] is Verdict.INCONCLUSIVE
    assert got["ttft_drift"][2] == ("TTFT p50 drift: too few windows after the baseline "
                                    "to fit a trend")


def test_every_judgement_is_said_in_both_languages_with_the_english_it_records() -> None:
    windows = soak(fallback_at=30, fail_at=3, ttft_per_h=0.01)
    judged = judge(windows, Criteria(), KV) + judge(soak(hours=1.3), Criteria(), KV)
    en, zh = translator("en"), translator("zh")
    for j in judged:
        assert set(j.reason.params) == CODES[j.reason.code], j.reason.code
        assert say(en, j.reason) == j.text
        said = say(zh, j.reason)
        assert said != j.text and not math.isnan(len(said)), said
