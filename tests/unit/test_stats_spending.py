"""Alpha spending and group-sequential boundaries: published values and a simulation."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import ConfigError, MeasurementError
from harness.stats.special import t_ppf
from harness.stats.spending import (
    ALPHA_RESERVE,
    Spending,
    boundaries,
    cumulative_alpha,
    look_plan,
    nominal_levels,
    planned_looks,
    spent_alpha,
    t_boundaries,
)


def test_obrien_fleming_matches_published_boundaries() -> None:
    # Lan-DeMets O'Brien-Fleming type, 5 equally spaced looks, one-sided 0.025
    # (as tabulated by the R packages ldbounds / gsDesign)
    got = boundaries([2, 4, 6, 8, 10], 0.025)
    assert got == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=2e-3)


def test_pocock_type_matches_published_boundaries() -> None:
    got = boundaries([2, 4, 6, 8, 10], 0.025, Spending.POCOCK)
    assert got == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=2e-3)


def test_single_look_is_the_fixed_sample_quantile() -> None:
    assert boundaries([8], 0.05) == pytest.approx([1.6449], abs=1e-4)


@pytest.mark.parametrize("spending", list(Spending))
def test_spending_is_monotone_and_sums_to_alpha(spending: Spending) -> None:
    looks = planned_looks(3, 8)
    cum = spent_alpha(looks, 0.05, spending)
    increments = np.diff([0.0, *cum])
    assert (increments > 0).all()
    assert cum[-1] == pytest.approx(0.05, abs=1e-15)
    assert sum(increments) == pytest.approx(0.05, abs=1e-12)
    fine = [cumulative_alpha(t, 0.05, spending) for t in np.linspace(0, 1, 101)]
    assert fine == sorted(fine)
    assert fine[0] == 0.0
    assert fine[-1] == pytest.approx(0.05, abs=1e-9)


def test_obrien_fleming_spends_little_early_and_nominal_levels_rise() -> None:
    levels = nominal_levels(planned_looks(3, 8), 0.05)
    assert levels == sorted(levels)
    assert levels[0] < 0.002          # a stop after 3 pairs needs overwhelming evidence
    assert 0.03 < levels[-1] < 0.05   # the last look is close to the fixed-sample level


def test_boundaries_keep_the_overall_error_in_a_simulation() -> None:
    """Brownian-motion paths under the null cross some boundary with probability alpha."""
    looks = planned_looks(3, 8)
    c = np.array(boundaries(looks, 0.05))
    rng = np.random.default_rng(20240601)
    steps = rng.standard_normal((400_000, looks[-1]))
    walk = np.cumsum(steps, axis=1)[:, np.array(looks) - 1]
    z = walk / np.sqrt(np.array(looks))
    crossed = (z >= c).any(axis=1).mean()
    # 400k paths: standard error ~3.4e-4
    assert crossed == pytest.approx(0.05, abs=1.5e-3)
    looked_once = (z[:, -1] >= c[-1]).mean()
    assert looked_once < 0.05  # the last look alone is stricter than a single test


def test_upto_gives_the_same_prefix() -> None:
    looks = planned_looks(3, 8)
    assert boundaries(looks, 0.05, upto=2) == pytest.approx(boundaries(looks, 0.05)[:3])


def test_planned_looks_and_their_errors() -> None:
    assert planned_looks(3, 8) == [3, 4, 5, 6, 7, 8]
    assert planned_looks(4, 4) == [4]
    with pytest.raises(ConfigError):
        planned_looks(1, 8)
    with pytest.raises(ConfigError):
        planned_looks(5, 4)
    with pytest.raises(MeasurementError):
        boundaries([3, 3, 4], 0.05)
    with pytest.raises(MeasurementError):
        boundaries([], 0.05)


def test_t_boundaries_spend_exactly_alpha_for_a_sequential_t_test() -> None:
    """Fresh null paths (another seed than the one the boundaries were fixed with)."""
    looks = planned_looks(3, 8)
    c = np.array(t_boundaries(looks, 0.05))
    rng = np.random.default_rng(777)
    x = rng.standard_normal((300_000, looks[-1]))
    total, squares = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    t = []
    for n in looks:
        mean = total[:, n - 1] / n
        var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
        t.append(mean / np.sqrt(var / n))
    stats = np.stack(t, axis=1)
    assert (stats >= c).any(axis=1).mean() == pytest.approx(0.05, abs=1.5e-3)
    assert (stats <= -c).any(axis=1).mean() == pytest.approx(0.05, abs=1.5e-3)
    # the z boundaries' nominal levels applied to t statistics overspend
    naive = np.array([t_ppf(1 - p, n - 1) for p, n in zip(nominal_levels(looks, 0.05), looks,
                                                           strict=True)])
    assert (stats >= naive).any(axis=1).mean() > 0.054


def test_look_plan_keeps_a_reserve_and_is_deterministic() -> None:
    plan = look_plan(planned_looks(3, 8), 0.95)
    assert plan.budget == pytest.approx(0.05)
    assert plan.alpha == pytest.approx(0.05 * (1 - ALPHA_RESERVE))
    assert plan.spent[-1] == pytest.approx(plan.alpha)
    assert list(plan.critical) == sorted(plan.critical, reverse=True)
    assert all(0 < p < plan.alpha for p in plan.nominal)
    assert plan == look_plan(planned_looks(3, 8), 0.95)
    with pytest.raises(MeasurementError):
        look_plan([3, 4], 1.0)
    with pytest.raises(MeasurementError):
        plan.index(9)
