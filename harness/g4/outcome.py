"""What a G4 run's soak measured and how it was judged, as the suite's checks read it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import GateError, MeasurementError
from harness.g4.criteria import DRIFT_WORDS, Criteria, horizon_words
from harness.g4.judgement import Judgement
from harness.loadgen.soak_windows import Window
from harness.reasons import Reason
from harness.verdict import Verdict


@dataclass(frozen=True)
class G4Outcome:
    """What the soak measured and how it was judged, or the error that ended it (every
    window stored before the error is kept; each check then says ERROR)."""

    windows: list[Window]
    planned: int
    status: str  # the soak's own: done, stopped, failed
    judged: list[Judgement]
    criteria: Criteria
    stopped_early: str | None = None
    error: GateError | None = None

    def judgement(self, criterion: str) -> Judgement:
        if self.error is not None:
            raise self.error
        found = next((j for j in self.judged if j.criterion == criterion), None)
        if found is None:  # no window at all: judge() said so once
            why = next((j.text for j in self.judged), "no judgement")
            raise MeasurementError(f"{criterion} cannot be judged: {why}", stage="g4 judge")
        return found

    def expected(self, criterion: str) -> tuple[Reason, str]:
        """What the criterion asks, as a reason and in English."""
        return expected(criterion, self.criteria)


def expected(criterion: str, c: Criteria) -> tuple[Reason, str]:
    """What a criterion asks under `c`, as a reason and in English (the check's words)."""
    if criterion == "error_rate":
        return (Reason("g4.error_rate_ok", {"max": f"{c.max_error_rate:.1%}"}),
                f"every window at most {c.max_error_rate:.1%} failed")
    if criterion in DRIFT_WORDS:
        limit = {"ttft_drift": c.max_ttft_drift_per_24h,
                 "throughput_drift": c.max_throughput_drift_per_24h,
                 "memory_growth": c.max_memory_growth_per_24h}[criterion]
        per = horizon_words(min(24.0, c.duration_h))
        return (Reason("g4.drift_expected", {"criterion": criterion,
                                             "max": f"{limit:.1%}", "per": per}),
                f"{DRIFT_WORDS[criterion]} within {limit:.1%} per {per} (the worse end "
                "of its 95 % interval)")
    if criterion == "restarts":
        return (Reason("g4.restarts_expected", {"max": c.max_restarts}),
                f"at most {c.max_restarts} engine restarts")
    if criterion == "engine_clock":
        return (Reason("g4.engine_clock_expected"),
                "the engines' own counters agree with the soak's windows: no window's "
                "mean TTFT below theirs, the requests they ended the ones the soak sent")
    if criterion == "hardware":
        return (Reason("g4.hardware_expected"),
                "no new Xid, uncorrectable ECC or NVMe media error, and no NVMe critical "
                "warning newly set, on the GPU and storage hosts while the soak runs")
    return (Reason("g4.engaged_expected", {"min": f"{c.min_device_share:.0%}"}),
            "the accelerator engaged in every window: external-tier hits, device reads "
            f"at least {c.min_device_share:.0%} of the KV they stand for")


def window_line(w: Window, judged: Sequence[Judgement]) -> str:
    """A closed window as the progress line says it."""
    ttft = f"{w.ttft_p50_s * 1000:.0f} ms" if w.ttft_p50_s is not None else "-"
    missed = [j.criterion for j in judged if j.verdict is Verdict.STOP_LOSS]
    return (f"window {w.index + 1}: {w.requests} req, {w.failed} failed, TTFT p50 {ttft}, "
            f"{w.throughput_tps:.0f} tok/s" + (f"; missed: {', '.join(missed)}"
                                               if missed else ""))
