"""Alpha spending over planned looks, and the group-sequential boundaries it implies.

The gate looks at a cell after each planned number of repetition pairs and may stop at
any look. Looking more than once at a fixed confidence level would inflate the wrong-PASS
rate, so the one-sided error budget alpha is spent over the looks with a Lan-DeMets
spending function, and each look's critical value is the exact group-sequential boundary
for that spending (Brownian-motion correlation of the looks, computed by numerical
integration; Jennison & Turnbull 2000, ch. 7 and 19). boundaries() gives the classical
boundaries for a z statistic (known variance; checked against published tables). The
decision uses t_boundaries(): the variance comes from a handful of repetitions, so the
statistic is a Student t with pairs - 1 degrees of freedom, and the boundaries are set so
that the sequential t-test spends exactly the same alpha (see its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

import numpy as np

from harness.errors import ConfigError, MeasurementError
from harness.stats.special import FloatArray, norm_pdf, norm_ppf, norm_sf, t_ppf, t_sf


class Spending(StrEnum):
    """Lan-DeMets spending functions alpha(t), t = information fraction in (0, 1]."""

    OBRIEN_FLEMING = "obrien-fleming"  # spends almost nothing early: early stops need strong data
    POCOCK = "pocock"                  # spends evenly: stops earlier, larger final boundary


def cumulative_alpha(fraction: float, alpha: float,
                     spending: Spending = Spending.OBRIEN_FLEMING) -> float:
    """alpha(t): the one-sided error that may have been spent by information fraction t."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if fraction <= 0.0:
        return 0.0
    t = min(fraction, 1.0)
    if spending is Spending.OBRIEN_FLEMING:
        # one-sided Lan-DeMets O'Brien-Fleming type: 2 (1 - Phi(z_{1-alpha/2} / sqrt t))
        return math.erfc(norm_ppf(1.0 - alpha / 2.0) / math.sqrt(t) / math.sqrt(2.0))
    return alpha * math.log(1.0 + (math.e - 1.0) * t)


def planned_looks(min_reps: int, max_reps: int) -> list[int]:
    """Rep-pair counts at which the gate looks at a cell: every pair from min to max.

    Looking after every pair costs almost no power under O'Brien-Fleming spending (the
    boundaries account for the correlation of the looks) and saves repetitions (each one
    is two engine restarts) whenever the evidence is already clear.
    """
    if min_reps < 2:
        raise ConfigError(f"repetitions.min must be >= 2 (a variance needs two), got {min_reps}",
                          key="gates.g3.repetitions.min")
    if max_reps < min_reps:
        raise ConfigError(f"repetitions.max ({max_reps}) is below repetitions.min ({min_reps})",
                          key="gates.g3.repetitions.max")
    return list(range(min_reps, max_reps + 1))


def check_looks(looks: Sequence[int]) -> list[int]:
    """The looks as a validated list: positive, strictly increasing, at least one."""
    out = [int(k) for k in looks]
    if not out or out[0] < 2 or any(b <= a for a, b in pairwise(out)):
        raise MeasurementError(f"planned looks must be increasing rep counts >= 2, got {out}",
                               stage="g3-decision")
    return out


def spent_alpha(looks: Sequence[int], alpha: float,
                spending: Spending = Spending.OBRIEN_FLEMING) -> list[float]:
    """Cumulative alpha spent by each planned look (information = reps / last look)."""
    plan = check_looks(looks)
    last = plan[-1]
    cum = [cumulative_alpha(k / last, alpha, spending) for k in plan]
    cum[-1] = alpha  # exact at the end, whatever rounding the spending function has
    return cum


_LOWER = -9.0   # the continuation densities are truncated here (mass below ~1e-19)
_GRID = 401    # points per look for Simpson's rule (a step of ~0.03 sd; 1e-6 accurate)


def _simpson_weights(n: int, step: float) -> FloatArray:
    w = np.ones(n)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w * step / 3.0


def boundaries(looks: Sequence[int], alpha: float,
               spending: Spending = Spending.OBRIEN_FLEMING,
               upto: int | None = None) -> list[float]:
    """One-sided z boundaries c_k: P(Z_1<c_1, ..., Z_{k-1}<c_{k-1}, Z_k>=c_k) = spent increment.

    upto (an index into looks) stops after that look: later boundaries do not change
    earlier ones, so a decision at look k needs only the first k.

    Under the null the look statistics are Z_k = S(t_k)/sqrt(t_k) for a Brownian motion S,
    so Z_k | Z_{k-1}=y is normal with mean y sqrt(t_{k-1}/t_k) and variance 1 - t_{k-1}/t_k.
    The density of paths that have not crossed is carried on a grid from look to look.
    """
    plan = check_looks(looks)
    cum = spent_alpha(plan, alpha, spending)
    fractions = [k / plan[-1] for k in plan]
    inc = [cum[0]] + [b - a for a, b in pairwise(cum)]
    out = [norm_ppf(1.0 - inc[0])]
    grid = np.linspace(_LOWER, out[0], _GRID)
    dens = norm_pdf(grid) * _simpson_weights(_GRID, grid[1] - grid[0])  # weighted density
    last = len(plan) - 1 if upto is None else min(upto, len(plan) - 1)
    for k in range(1, last + 1):
        ratio = fractions[k - 1] / fractions[k]
        r, s = math.sqrt(ratio), math.sqrt(1.0 - ratio)
        mean = r * grid

        def crossing(c: float, mean: FloatArray = mean, dens: FloatArray = dens,
                     s: float = s) -> float:
            return float(np.dot(dens, norm_sf((c - mean) / s)))

        target = inc[k]
        if target <= 0.0:
            c_k = math.inf
        else:
            lo, hi = -5.0, 40.0
            for _ in range(100):
                mid = 0.5 * (lo + hi)
                if crossing(mid) > target:
                    lo = mid
                else:
                    hi = mid
                if hi - lo < 1e-8:
                    break
            c_k = 0.5 * (lo + hi)
        out.append(c_k)
        upper = min(c_k, 12.0)
        new_grid = np.linspace(_LOWER, upper, _GRID)
        kernel = norm_pdf((new_grid[:, None] - mean[None, :]) / s) / s
        dens = (kernel @ dens) * _simpson_weights(_GRID, new_grid[1] - new_grid[0])
        grid = new_grid
    return out


def nominal_levels(looks: Sequence[int], alpha: float,
                   spending: Spending = Spending.OBRIEN_FLEMING,
                   upto: int | None = None) -> list[float]:
    """The nominal one-sided error P(Z > c_k) of each look's boundary."""
    return [float(norm_sf(np.array(c))) if math.isfinite(c) else 0.0
            for c in boundaries(looks, alpha, spending, upto)]


_PATHS = 100_000   # null paths for the t boundaries (x2 by symmetry): total error ~ +-5e-4
_PATH_SEED = 20240607  # fixed: a plan's boundaries are a function of the plan alone


def t_boundaries(looks: Sequence[int], alpha: float,
                 spending: Spending = Spending.OBRIEN_FLEMING) -> list[float]:
    """Student-t boundaries that spend alpha exactly for a sequential one-sample t-test.

    Applying the z boundaries' nominal levels to t statistics (the "significance level
    approach") overspends with few repetitions: 5.7 % instead of 5 % for looks 3..8,
    because the variance estimate changes between looks and the t statistics are less
    correlated than z ones. Under the null the sequential t statistics are pivotal (their
    joint law depends only on the look sizes), so the boundaries are fixed once per plan
    from simulated null paths: at each look, the boundary is set so that exactly the
    spent increment of the paths still running crosses it (the first look's is the exact
    t quantile). Both tails of each path are used (the law is symmetric).
    """
    plan = check_looks(looks)
    cum = spent_alpha(plan, alpha, spending)
    inc = [cum[0]] + [b - a for a, b in pairwise(cum)]
    rng = np.random.default_rng(_PATH_SEED)
    x = rng.standard_normal((_PATHS, plan[-1]))
    total, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    out = [t_ppf(1.0 - inc[0], plan[0] - 1)]
    alive = np.ones(2 * _PATHS, dtype=bool)
    for k, n in enumerate(plan):
        mean = total[:, n - 1] / n
        var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
        t = mean / np.sqrt(var / n)
        t = np.concatenate([t, -t])
        if k > 0:
            want = round(inc[k] * t.size)
            running = t[alive]
            if 0 < want <= running.size:
                cut = running.size - want  # the want-th largest running value
                out.append(float(np.partition(running, cut)[cut]))
            else:
                out.append(math.inf)
        alive &= t < out[k]
    return out


@dataclass(frozen=True)
class LookPlan:
    """Everything a look needs from the plan; compute once per cell with look_plan()."""

    looks: tuple[int, ...]
    budget: float                 # 1 - confidence: the promised one-sided error per side
    alpha: float                  # what the looks spend: budget x (1 - ALPHA_RESERVE)
    spending: Spending
    spent: tuple[float, ...]      # cumulative alpha by each look
    critical: tuple[float, ...]   # Student-t critical value per look (df = pairs - 1)
    nominal: tuple[float, ...]    # its one-sided nominal level P(T_df > critical)
    z: tuple[float, ...]          # the large-sample (known variance) boundaries, for reference

    def index(self, look: int) -> int:
        if look not in self.looks:
            raise MeasurementError(f"look {look} is not a planned look {list(self.looks)}",
                                   stage="g3-decision")
        return self.looks.index(look)


ALPHA_RESERVE = 0.2
"""Share of the error budget kept unspent as headroom for what the t calibration does not
cover (the bootstrap standard error is an estimate; medians and ratios are only nearly
normal). Measured calibration error of the criteria: within about +-0.7 percentage
points of the spent alpha; the reserve is 1 point of the default 5 % budget."""


def look_plan(looks: Sequence[int], confidence: float,
              spending: Spending = Spending.OBRIEN_FLEMING) -> LookPlan:
    """The sequential plan for a cell: spending, t boundaries and nominal levels per look."""
    if not 0.5 < confidence < 1.0:
        raise MeasurementError(f"confidence must be in (0.5, 1), got {confidence}",
                               stage="g3-decision")
    plan = check_looks(looks)
    budget = 1.0 - confidence
    alpha = budget * (1.0 - ALPHA_RESERVE)
    crit = t_boundaries(plan, alpha, spending)
    nominal = [t_sf(c, n - 1) if math.isfinite(c) else 0.0 for c, n in zip(crit,
                                                  plan, strict=True)]
    return LookPlan(tuple(plan), budget, alpha, spending,
                    tuple(spent_alpha(plan, alpha, spending)), tuple(crit), tuple(nominal),
                    tuple(boundaries(plan, alpha, spending)))
