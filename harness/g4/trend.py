"""A soak metric's drift: the least-squares slope over the windows after the baseline (the
first hour by default), with its confidence interval, as a share of the baseline's level
over a horizon: 24 h, or the soak's own length when it is shorter (a demo's or a test's
soak of seconds is held to its own length: a 24 h extrapolation of a minute's trend says
nothing; such a soak is a weakened setting and needs a sign-off anyway). Pure.

Why a slope and not two points: one slow window at hour 70 against one fast window at
hour 1 says nothing; a trend fitted through every window says whether the stack is
getting worse and how sure that is. The interval treats windows as independent; real
windows are autocorrelated (a slow minute is followed by another), which makes it too
narrow, so a criterion holds its bound (the pessimistic end), never the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.stats.special import t_ppf


@dataclass(frozen=True)
class Drift:
    """Relative change over `horizon_h`: the estimate and its two-sided interval."""

    change: float
    lo: float
    hi: float
    level: float  # the baseline's mean, what the shares are of
    windows: int  # fitted
    horizon_h: float = 24.0


def drift(hours: Sequence[float], values: Sequence[float | None], *, baseline_h: float,
          confidence: float, horizon_h: float = 24.0) -> Drift | None:
    """The drift of `values` (one per window, at `hours` from the start), fitted from the
    end of the first `baseline_h` hours; None when the first hour has no level to compare
    with or fewer than 3 windows follow it (no trend can be fitted)."""
    pairs = [(h, v) for h, v in zip(hours, values, strict=True)
             if v is not None and math.isfinite(v)]
    first = [v for h, v in pairs if h < baseline_h]
    after = [(h, v) for h, v in pairs if h >= baseline_h]
    if not first or len(after) < 3:
        return None
    level = float(np.mean(first))
    if level <= 0:
        return None
    x = np.asarray([h for h, _ in after], dtype=float)
    y = np.asarray([v for _, v in after], dtype=float)
    sxx = float(np.sum((x - x.mean()) ** 2))
    if sxx == 0:
        return None
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / sxx)
    resid = y - (y.mean() + slope * (x - x.mean()))
    df = len(after) - 2
    se = math.sqrt(float(np.sum(resid ** 2)) / df / sxx) if df > 0 else math.inf
    half = t_ppf(0.5 + confidence / 2, df) * se
    scale = horizon_h / level
    return Drift(change=slope * scale, lo=(slope - half) * scale, hi=(slope + half) * scale,
                 level=level, windows=len(after), horizon_h=horizon_h)
