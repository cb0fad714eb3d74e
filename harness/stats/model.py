"""The values the G3 decision takes and returns (frozen dataclasses, no behaviour)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from harness.reasons import Reason
from harness.verdict import Verdict


@dataclass(frozen=True)
class RepSample:
    """One arm's measured phase in one repetition."""

    ttft: npt.NDArray[np.float64]  # seconds per request; failed requests are np.inf
    output_tokens: int             # completed output tokens of the phase
    wall_time: float               # phase wall time, s (throughput = tokens / wall time)


@dataclass(frozen=True)
class Criteria:
    """What a cell is held to. No defaults here: the site config is the one place the
    decision settings live (harness/config/decision.py); max_failed_share guards the
    decision against phases that crashed. `applied` names the criteria that decide the
    cell ("drop", "gain"); one left out can neither pass nor fail it."""

    ttft_p50_drop: float
    throughput_gain: float
    band_top: float
    max_failed_share: float
    applied: tuple[str, ...] = ("drop", "gain")


@dataclass(frozen=True)
class Estimate:
    """A criterion's point estimate, interval and verdict at the look that decided it."""

    value: float
    lo: float
    hi: float
    verdict: Verdict


@dataclass(frozen=True)
class CellDecision:
    """The cell's verdict at a look. drop / gain are the intervals that decided each
    criterion (a criterion that cleared its threshold at an earlier look keeps that
    interval; details['decided_at'] says which look); the point values below are from
    all repetitions of this look."""

    verdict: Verdict
    reason: str
    needs_signoff: bool
    final: bool                    # no more repetitions would help or are allowed
    drop: Estimate
    gain: Estimate
    ttft_p50_baseline: float
    ttft_p50_accelerated: float
    thr_baseline: float
    thr_accelerated: float
    n_baseline: int                # requests (failed ones included)
    n_accelerated: int
    repetitions: int               # rep pairs used
    level: float                   # two-sided nominal level of the intervals at this look
    rule: str
    details: dict[str, object] = field(default_factory=dict)
    why: Reason | None = None      # the reason as a code + parameters (harness.reasons)
