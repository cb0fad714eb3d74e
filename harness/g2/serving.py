"""G2's serving baseline, the pure part: the figures of one measured repetition of the
baseline arm and the sanity judgement over a cell's repetitions.

Why a baseline before the A/B: a baseline arm that fails requests or whose figures move
from one repetition to the next makes any gain G3 reports meaningless. The figures:
TTFT p50 over the completed requests; throughput = the fixed output length x the
responses that reached it / wall time (G3's count, never the server's); prefill
throughput = the prompt tokens of the completed requests / wall time (the planner's
tokens/s a baseline engine prefills at that tier).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config.models import G2Serving
from harness.loadgen.records import RequestRecord
from harness.reasons import Reason
from harness.serving.phases import phase_tokens

# Failures a saturated client may cause itself; every other kind is the server's answer.
CLIENT_LIMITS = ("timeout", "cancelled")


@dataclass(frozen=True)
class RepFigures:
    ttft_p50_s: float
    throughput_tps: float  # output tokens / s at the fixed length
    prefill_tps: float  # prompt tokens of the completed requests / s
    requests: int
    failed: int
    saturation: str = ""  # why the phase's own client was saturated; '' when it was not
    client_failed: int = 0  # of `failed`: the client's own limits (timeout, cancelled)


def rep_figures(records: Sequence[RequestRecord], wall_time: float, fixed_tokens: int,
                prompt_tokens: Mapping[int, int | None], saturation: str = "") -> RepFigures:
    """One repetition's figures; `prompt_tokens` (doc id -> calibrated count) stands in
    where the server reported no usage. Warm-up requests do not count."""
    measured = [r for r in records if not r.warmup]
    done = [r for r in measured if r.ok and r.ttft is not None]
    ttft = statistics.median(r.ttft for r in done if r.ttft is not None) if done \
        else float("nan")
    wall = wall_time if wall_time > 0 else float("nan")
    prompt = sum((r.prompt_tokens or prompt_tokens.get(r.doc_id) or 0) for r in done)
    return RepFigures(ttft_p50_s=ttft,
                      throughput_tps=phase_tokens(measured, fixed_tokens).tokens / wall,
                      prefill_tps=prompt / wall, requests=len(measured),
                      failed=len(measured) - len(done), saturation=saturation,
                      client_failed=sum(r.error_kind in CLIENT_LIMITS for r in measured))


def cv(values: Sequence[float]) -> float:
    """Sample standard deviation / mean (nan below two values or at a zero mean)."""
    if len(values) < 2 or any(math.isnan(v) for v in values):
        return float("nan")
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else float("nan")


@dataclass(frozen=True)
class Judgement:
    """What the cell's repetitions show: `missed` (STOP-LOSS) lists the sanity criteria
    measured and missed, `undecided` (INCONCLUSIVE, when nothing was missed) why the
    others cannot be judged."""

    ttft_cv: float
    throughput_cv: float
    failed_share: float
    prefill_tps: float  # median over the repetitions
    missed: tuple[str, ...]
    undecided: tuple[str, ...]
    # the same as codes + parameters (harness.reasons), one per entry above
    missed_why: tuple[Reason, ...] = ()
    undecided_why: tuple[Reason, ...] = ()

    def measured(self, reps: Sequence[RepFigures]) -> str:
        ttft = statistics.median(r.ttft_p50_s for r in reps)
        thr = statistics.median(r.throughput_tps for r in reps)
        return (f"{len(reps)} reps: TTFT p50 {ttft:.3g} s (CV {self.ttft_cv:.1%}), "
                f"throughput {thr:.0f} tok/s (CV {self.throughput_cv:.1%}), prefill "
                f"{self.prefill_tps:.0f} tok/s, {self.failed_share:.1%} failed")

    def measured_why(self, reps: Sequence[RepFigures]) -> Reason:
        return Reason("g2.serving_measured", {
            "reps": len(reps), "ttft": f"{statistics.median(r.ttft_p50_s for r in reps):.3g}",
            "ttft_cv": f"{self.ttft_cv:.1%}",
            "thr": f"{statistics.median(r.throughput_tps for r in reps):.0f}",
            "thr_cv": f"{self.throughput_cv:.1%}", "prefill": f"{self.prefill_tps:.0f}",
            "failed": f"{self.failed_share:.1%}"})


def judge(reps: Sequence[RepFigures], limits: G2Serving) -> Judgement:
    """Failed requests are judged even when the client was saturated (the server answered
    them with errors), except the client's own timeouts; the CVs only when it was not
    (a saturated client's timings are its own)."""
    requests = sum(r.requests for r in reps)
    failed_share = sum(r.failed for r in reps) / requests if requests else 1.0
    ttft_cv = cv([r.ttft_p50_s for r in reps])
    thr_cv = cv([r.throughput_tps for r in reps])
    undecided = tuple(f"repetition {i + 1}: client saturated ({r.saturation})"
                      for i, r in enumerate(reps) if r.saturation)
    undecided_why = tuple(Reason("g2.rep_saturated", {"rep": i + 1, "detail": r.saturation})
                          for i, r in enumerate(reps) if r.saturation)
    judged_failed = sum(r.failed - (r.client_failed if r.saturation else 0) for r in reps)
    missed, missed_why = [], []
    if requests and judged_failed / requests > limits.max_failed_share:
        missed.append(f"{failed_share:.1%} of {requests} requests failed (at most "
                      f"{limits.max_failed_share:.1%})")
        missed_why.append(Reason("g2.failed_share", {
            "share": f"{failed_share:.1%}", "requests": requests,
            "max": f"{limits.max_failed_share:.1%}"}))
    for name, value, code in (("TTFT p50", ttft_cv, "g2.ttft_cv_high"),
                              ("throughput", thr_cv, "g2.throughput_cv_high")):
        if not undecided and not value <= limits.max_cv:  # nan (nothing completed) misses
            missed.append(f"{name} CV {value:.1%} across repetitions (at most "
                          f"{limits.max_cv:.0%})")
            missed_why.append(Reason(code, {"value": f"{value:.1%}",
                                            "max": f"{limits.max_cv:.0%}"}))
    return Judgement(ttft_cv, thr_cv, failed_share,
                     statistics.median(r.prefill_tps for r in reps) if reps else float("nan"),
                     tuple(missed), undecided, tuple(missed_why), undecided_why)
