"""Normal and Student-t distribution functions in plain numpy / math.

scipy is not a dependency of the harness, and the sequential boundaries need only these
few functions: a vectorised normal tail (for the boundary recursion), scalar normal and
Student-t quantiles (for the per-look critical values).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _erfc(x: FloatArray) -> FloatArray:
    """Complementary error function, fractional error < 1.2e-7 everywhere.

    Chebyshev fit from Numerical Recipes (erfcc); accurate in the far tail, which the
    group-sequential recursion needs (crossing probabilities of 1e-4 and below).
    """
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    ans = t * np.exp(poly)
    return np.where(x >= 0, ans, 2.0 - ans)


def norm_sf(x: FloatArray) -> FloatArray:
    """Upper tail P(Z > x) of the standard normal, vectorised."""
    return 0.5 * _erfc(np.asarray(x, dtype=np.float64) / _SQRT2)


def norm_pdf(x: FloatArray) -> FloatArray:
    """Standard normal density, vectorised."""
    return _INV_SQRT_2PI * np.exp(-0.5 * np.asarray(x, dtype=np.float64) ** 2)


def norm_ppf(p: float) -> float:
    """Standard normal quantile (bisection on math.erfc; exact to ~1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 0.5 * math.erfc(-mid / _SQRT2) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return 0.5 * (lo + hi)


def t_sf(x: float, df: int) -> float:
    """Upper tail P(T > x) of Student's t with an integer df (Abramowitz & Stegun 26.7.3-4)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    theta = math.atan(abs(x) / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    s = math.sin(theta)
    if df % 2 == 1:
        # A = (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)), df > 1
        term, series = 1.0, 1.0 if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            series += term
        a = 2.0 / math.pi * (theta + s * math.cos(theta) * series) if df > 1 else \
            2.0 / math.pi * theta
    else:
        # A = sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term, series = 1.0, 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            series += term
        a = s * series
    upper = 0.5 * (1.0 - a)
    return upper if x >= 0 else 1.0 - upper


def t_ppf(p: float, df: int) -> float:
    """Student-t quantile for an integer df, by bisection on t_sf."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    tail = 1.0 - p
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > tail:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_sf(mid, df) > tail:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def chi2_cdf(x: float, df: int) -> float:
    """P(X <= x) for a chi-square with an integer df (closed forms for even / odd df)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if x <= 0.0:
        return 0.0
    half = x / 2.0
    if df % 2 == 0:
        term, series = 1.0, 1.0
        for j in range(1, df // 2):
            term *= half / j
            series += term
        return max(0.0, 1.0 - math.exp(-half) * series)
    root = math.sqrt(x)
    base = math.erf(root / _SQRT2)                    # 2 Phi(sqrt x) - 1
    term, series = root, 0.0
    for j in range(1, (df - 1) // 2 + 1):
        if j > 1:
            term *= x / (2 * j - 1)
        series += term
    return max(0.0, base - 2.0 * _INV_SQRT_2PI * math.exp(-half) * series)


def chi2_ppf(p: float, df: int) -> float:
    """Chi-square quantile for an integer df, by bisection on chi2_cdf."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {p}")
    lo, hi = 0.0, float(df) + 10.0
    while chi2_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if chi2_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)
