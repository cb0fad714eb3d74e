"""The inf-aware percentile and the paired hierarchical bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.bootstrap import Arm, _replicate_p50, paired_bootstrap, percentile, within_only

INF = math.inf


def test_percentile_is_numpy_linear_on_finite_data() -> None:
    rng = np.random.default_rng(3)
    for size in (1, 2, 5, 64, 101):
        x = rng.lognormal(0.0, 0.5, size)
        for q in (0.0, 25.0, 50.0, 90.0, 99.0, 100.0):
            assert percentile(x, q) == pytest.approx(float(np.percentile(x, q)), rel=1e-12)


def test_failed_requests_are_infinitely_slow() -> None:
    assert percentile([1.0, 2.0, INF], 50.0) == 2.0          # one of three failed
    assert percentile([1.0, 2.0, INF, INF], 50.0) == INF     # half failed: p50 leans on inf
    assert percentile([1.0, INF, INF], 50.0) == INF          # more than half failed
    assert percentile([1.0, 3.0, 5.0, INF], 50.0) == 4.0     # a failure shifts the p50 up
    assert percentile([INF, INF], 50.0) == INF
    assert percentile([1.0, INF], 0.0) == 1.0


def test_percentile_refuses_nan_and_empty() -> None:
    with pytest.raises(ValueError):
        percentile([1.0, math.nan], 50.0)
    with pytest.raises(ValueError):
        percentile([], 50.0)


def _arm(ttfts: list[np.ndarray]) -> Arm:
    return Arm.build(ttfts, [100.0] * len(ttfts), [1.0] * len(ttfts))


def test_replicate_p50_equals_direct_pooling_for_ragged_reps_with_failures() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        sizes = rng.integers(1, 12, size=4)
        ttfts = [np.where(rng.random(s) < 0.3, INF, rng.lognormal(0, 0.4, s)) for s in sizes]
        arm = _arm(ttfts)
        reps = rng.integers(0, 4, size=(7, 4))
        got = _replicate_p50(arm, reps, rng, within=False)
        want = [percentile(np.concatenate([ttfts[i] for i in row]), 50.0) for row in reps]
        assert np.array_equal(got, np.array(want)) or np.allclose(got, want, rtol=1e-12)


def test_within_resampling_matches_a_plain_bootstrap_of_one_rep() -> None:
    """One rep, reps fixed: the replicate medians are a bootstrap of that rep's median."""
    rng = np.random.default_rng(5)
    x = rng.lognormal(0.0, 0.4, 33)
    arm = _arm([x])
    reps = np.zeros((20000, 1), dtype=np.int64)
    got = _replicate_p50(arm, reps, np.random.default_rng(1), within=True)
    plain = np.median(x[np.random.default_rng(2).integers(0, 33, size=(20000, 33))], axis=1)
    assert got.mean() == pytest.approx(plain.mean(), rel=2e-3)
    assert got.std() == pytest.approx(plain.std(), rel=0.05)
    assert set(np.unique(got)) <= set(x)   # odd size: every replicate median is a request


def test_pairing_cancels_drift_shared_by_the_arms() -> None:
    """Accelerated = baseline x 0.7 request by request: without request resampling every
    replicate ratio is exactly 0.7, however much the reps differ from each other."""
    rng = np.random.default_rng(8)
    drift = np.exp(rng.normal(0, 0.5, 6))
    ttfts = [d * rng.lognormal(0, 0.4, 16) for d in drift]
    base = Arm.build(ttfts, [1000.0 * d for d in drift], [1.0] * 6)
    acc = Arm.build([0.7 * t for t in ttfts], [1300.0 * d for d in drift], [1.0] * 6)
    reps = rng.integers(0, 6, size=(500, 6))
    ratio = _replicate_p50(acc, reps, rng, False) / _replicate_p50(base, reps, rng, False)
    assert np.allclose(ratio, 0.7)
    out = paired_bootstrap(base, acc, 500, seed=4)
    assert np.allclose(out.log_gain, math.log(1.3))


def test_bootstrap_is_deterministic_by_seed() -> None:
    rng = np.random.default_rng(9)
    base = _arm([rng.lognormal(0, 0.4, 20) for _ in range(4)])
    acc = _arm([rng.lognormal(-0.3, 0.4, 20) for _ in range(4)])
    a = paired_bootstrap(base, acc, 300, seed=17)
    b = paired_bootstrap(base, acc, 300, seed=17)
    c = paired_bootstrap(base, acc, 300, seed=18)
    assert np.array_equal(a.log_ratio, b.log_ratio)
    assert not np.array_equal(a.log_ratio, c.log_ratio)
    assert np.array_equal(within_only(base, acc, 300, 5), within_only(base, acc, 300, 5))


def test_within_only_variance_is_part_of_the_two_stage_variance() -> None:
    rng = np.random.default_rng(10)
    drift = np.exp(rng.normal(0, 0.2, 8))
    base = _arm([d * rng.lognormal(0, 0.4, 32) for d in drift])
    acc = _arm([d * np.exp(rng.normal(0, 0.1)) * rng.lognormal(-0.4, 0.4, 32) for d in drift])
    two = paired_bootstrap(base, acc, 2000, seed=1).log_ratio.var()
    within = within_only(base, acc, 2000, seed=2).var()
    assert 0 < within < two


def test_a_failed_majority_in_a_resample_gives_an_infinite_replicate() -> None:
    base = _arm([np.array([1.0, 1.1, 1.2]), np.array([1.0, 1.1, 1.3])])
    acc = _arm([np.array([INF, INF, INF]), np.array([0.5, 0.6, 0.7])])
    out = paired_bootstrap(base, acc, 400, seed=3)
    assert np.isposinf(out.log_ratio).any()
    assert np.isfinite(out.log_ratio).any()
