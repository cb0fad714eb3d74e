"""Confidence intervals of one look from the bootstrap replicates.

Why not percentile intervals: with 3 repetitions a percentile interval cannot leave the
range of the observed repetitions (if all three show a gain above 0.29, every resample
does, so a gain exactly at the threshold passes 1 time in 8 whatever the level), and the
early looks of a sequential plan need tail levels of 1e-3 and below, which 2000 resamples
do not resolve. So the bootstrap supplies the standard error on the log scale and the
look supplies a Student-t critical value with n-1 degrees of freedom (n = rep pairs):
the interval is est -+ t * se, mapped back through exp. It can reach past the data, and
it is exact for normal repetition-level noise.

The standard error: the two-stage (reps, then requests) bootstrap variance counts the
within-repetition request noise twice: once inside the spread of the repetitions, once
through the request resampling (Davison & Hinkley 1997, sec. 3.8). Left in, it makes the
TTFT interval up to sqrt(2) too wide (measured: a nominal 5 % test rejects 0.4 %). A
second pass that keeps every repetition once and resamples only requests measures that
within part; it is removed once and the remainder is scaled by n/(n-1) (the bootstrap's
plug-in 1/n variance of a mean). That estimate has the chi-square(n-1) law the t
critical value assumes, so it is floored only at the 5 % quantile of that law times the
within part: bootstrap noise can never yield a zero or negative variance, and the
level of the t interval is untouched outside that 5 % tail. (Flooring at the within part
itself is valid too but halves the real error rate and costs power: measured 2.5 %
instead of 5 % at 8 pairs, 0.15 % at 3.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.stats.special import FloatArray, chi2_ppf

FLOOR_QUANTILE = 0.05  # the TTFT variance is never below this quantile of its own law


@dataclass(frozen=True)
class LogInterval:
    """An interval on the log scale; lo / hi may be -inf / +inf (unbounded side)."""

    est: float
    lo: float
    hi: float
    se: float
    nonfinite: int   # replicates that were +-inf or nan (too many failures in a resample)


def _finite_var(x: FloatArray) -> float:
    finite = x[np.isfinite(x)]
    return float(np.var(finite, ddof=1)) if finite.size >= 2 else math.inf


def ttft_variance(two_stage: FloatArray, within: FloatArray, n: int) -> dict[str, float]:
    """Variance of log(p50_acc/p50_base) with the within part counted once (see module)."""
    v2 = _finite_var(two_stage)
    vw = _finite_var(within)
    floor = chi2_ppf(FLOOR_QUANTILE, n - 1) / (n - 1) * vw
    used = max(n / (n - 1) * (v2 - vw), floor) if math.isfinite(v2 + vw) else math.inf
    return {"two_stage": v2, "within": vw, "floor": floor, "used": used}


def gain_variance(replicates: FloatArray, n: int) -> float:
    """Variance of log(thr_acc/thr_base): repetitions are its only level."""
    v = _finite_var(replicates)
    return n / (n - 1) * v if math.isfinite(v) else math.inf


def log_interval(est: float, replicates: FloatArray, variance: float,
                 critical: float) -> LogInterval:
    """est -+ critical * se; a side is unbounded if a replicate is non-finite on it.

    A replicate of +inf (the resampled accelerated p50 is inf), -inf, or nan (both arms
    inf) says the resamples reach an undefined or infinitely bad value: the interval is
    then open on that side, so such data can never PASS on it.
    """
    se = math.sqrt(variance) if math.isfinite(variance) else math.inf
    half = math.inf if math.isinf(critical) or math.isinf(se) else critical * se
    lo, hi = est - half, est + half
    nan = bool(np.isnan(replicates).any())
    if nan or bool(np.isneginf(replicates).any()):
        lo = -math.inf
    if nan or bool(np.isposinf(replicates).any()):
        hi = math.inf
    nonfinite = int((~np.isfinite(replicates)).sum())
    return LogInterval(est, lo, hi, se, nonfinite)


def exp_minus_one(x: float) -> float:
    """exp(x) - 1 with exp(+inf) = inf, exp(-inf) = 0 and no overflow error."""
    if x > 700.0:
        return math.inf
    return math.exp(x) - 1.0 if x != -math.inf else -1.0
