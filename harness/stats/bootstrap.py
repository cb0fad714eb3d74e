"""The paired, hierarchical bootstrap of one G3 cell, vectorised in numpy.

Repetitions are resampled as pairs (rep i of the baseline goes with rep i of the
accelerated arm: they ran back to back in an ABBA block and share the drift of the
site), then requests are resampled within each drawn repetition, independently per arm.
Every replicate's pooled TTFT p50 is computed from per-request multiplicities (counts
over the arm's sorted pooled requests), which handles repetitions of unequal size and
+inf (failed) requests exactly as numpy's linear-interpolation percentile would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from harness.stats.special import FloatArray

IntArray = npt.NDArray[np.int64]


def percentile(x: npt.ArrayLike, q: float) -> float:
    """numpy 'linear' percentile (q in 0..100) that treats +inf as infinitely slow.

    numpy itself returns nan when it interpolates towards +inf; here anything that
    interpolates towards +inf is +inf, and an exact hit on a finite order statistic
    stays finite. nan is refused (a failed request is +inf, never nan).
    """
    a = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if a.size == 0:
        raise ValueError("percentile of an empty sample")
    if np.isnan(a).any():
        raise ValueError("percentile of a sample containing nan")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    h = (a.size - 1) * q / 100.0
    lo = math.floor(h)
    frac = h - lo
    if frac == 0.0:
        return float(a[lo])
    return _lerp(float(a[lo]), float(a[lo + 1]), frac)


def _lerp(lo: float, hi: float, frac: float) -> float:
    if math.isinf(hi) or math.isinf(lo):
        return hi if math.isinf(hi) else lo
    return lo + (hi - lo) * frac


@dataclass(frozen=True)
class Arm:
    """One arm's repetitions flattened: pooled TTFTs sorted, plus where each rep lives."""

    sorted_ttft: FloatArray   # all requests of all reps, ascending (+inf last)
    rank: IntArray            # rank[j] = position in sorted_ttft of concatenated request j
    offsets: IntArray         # start of rep i in the concatenated (unsorted) requests
    sizes: IntArray           # requests per rep
    tokens: FloatArray        # output tokens per rep
    wall: FloatArray          # wall time per rep, s

    @classmethod
    def build(cls, ttfts: Sequence[FloatArray], tokens: Sequence[float],
              wall: Sequence[float]) -> Arm:
        concat = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in ttfts])
        order = np.argsort(concat, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        sizes = np.array([np.asarray(t).size for t in ttfts], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return cls(concat[order], rank.astype(np.int64), offsets, sizes,
                   np.asarray(tokens, dtype=np.float64), np.asarray(wall, dtype=np.float64))


_BLOCK = 256  # replicates per block: keeps the (block, reps, requests) arrays in cache


def _replicate_p50(arm: Arm, reps: IntArray, rng: np.random.Generator,
                   within: bool) -> FloatArray:
    """Pooled p50 of each replicate; reps[b, j] is the j-th rep drawn in replicate b."""
    blocks = [_p50_block(arm, reps[i:i + _BLOCK], rng, within)
              for i in range(0, reps.shape[0], _BLOCK)]
    return np.concatenate(blocks)


def _p50_block(arm: Arm, reps: IntArray, rng: np.random.Generator,
               within: bool) -> FloatArray:
    n_boot, n_draw = reps.shape
    k = arm.sorted_ttft.size
    width = int(arm.sizes.max())
    ragged = bool((arm.sizes != width).any())
    shape = (n_boot, n_draw, width)
    if not within:
        local = np.broadcast_to(np.arange(width, dtype=np.int64), shape)
    elif ragged:
        sizes = arm.sizes[reps][..., None]
        draw = (rng.random(shape, dtype=np.float32) * sizes).astype(np.int64)
        local = np.minimum(draw, sizes - 1)
    else:
        local = rng.integers(0, width, size=shape, dtype=np.int64)
    start = arm.offsets[reps][..., None]
    pos = arm.rank[np.minimum(start + local, k - 1)]
    pos += (np.arange(n_boot, dtype=np.int64) * k)[:, None, None]
    if ragged:  # slots past a rep's size go to a trash bin at the end
        valid = np.arange(width) < arm.sizes[reps][..., None]
        pos = np.where(valid, pos, n_boot * k)
    counts = np.bincount(pos.ravel(), minlength=n_boot * k + 1)[: n_boot * k]
    cum = np.cumsum(counts.reshape(n_boot, k), axis=1)
    total = cum[:, -1]
    h = (total - 1) * 0.5
    lo_idx = np.floor(h).astype(np.int64)
    frac = h - lo_idx
    # order statistic i = number of sorted slots whose cumulative count is <= i
    lo_pos = (cum <= lo_idx[:, None]).sum(axis=1)
    hi_pos = (cum <= np.minimum(lo_idx + 1, total - 1)[:, None]).sum(axis=1)
    lo_val = arm.sorted_ttft[lo_pos]
    hi_val = arm.sorted_ttft[hi_pos]
    with np.errstate(invalid="ignore"):
        mid = lo_val + (hi_val - lo_val) * frac
    out = np.where(frac == 0.0, lo_val, np.where(np.isinf(hi_val), np.inf, mid))
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates on the log scale (monotone in drop and gain)."""

    log_ratio: FloatArray   # log(p50_acc / p50_base); +inf when acc's p50 is inf, nan if both
    log_gain: FloatArray    # log(thr_acc / thr_base); -inf when acc produced nothing


def paired_bootstrap(base: Arm, acc: Arm, n_boot: int, seed: int,
                     within: bool = True) -> Replicates:
    """Replicates of the TTFT ratio and the throughput ratio under one shared rep draw."""
    rng = np.random.default_rng(seed)
    n = base.sizes.size
    reps = rng.integers(0, n, size=(n_boot, n), dtype=np.int64)
    p50_b = _replicate_p50(base, reps, rng, within)
    p50_a = _replicate_p50(acc, reps, rng, within)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(p50_a) - np.log(p50_b)
        thr_b = base.tokens[reps].sum(axis=1) / base.wall[reps].sum(axis=1)
        thr_a = acc.tokens[reps].sum(axis=1) / acc.wall[reps].sum(axis=1)
        log_gain = np.log(thr_a) - np.log(thr_b)
    return Replicates(np.asarray(log_ratio, np.float64), np.asarray(log_gain, np.float64))


def within_only(base: Arm, acc: Arm, n_boot: int, seed: int) -> FloatArray:
    """log(p50_acc / p50_base) replicates with every repetition kept once, requests resampled.

    Their variance is the within-repetition (request sampling) part of the two-stage
    variance, which the two-stage bootstrap counts twice (decision.py removes it once).
    """
    rng = np.random.default_rng(seed)
    n = base.sizes.size
    reps = np.broadcast_to(np.arange(n, dtype=np.int64), (n_boot, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(_replicate_p50(acc, reps, rng, True)) - np.log(
            _replicate_p50(base, reps, rng, True))
    return np.asarray(out, dtype=np.float64)
