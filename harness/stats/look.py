"""One look at a cell: point estimates, bootstrap, intervals, per-criterion verdicts.

Each look draws its own random stream from (cell seed, look), so the looks of a cell can
be recomputed at any later look and come out exactly as they did the first time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.stats.bootstrap import Arm, paired_bootstrap, percentile, within_only
from harness.stats.intervals import (
    LogInterval,
    exp_minus_one,
    gain_variance,
    log_interval,
    ttft_variance,
)
from harness.stats.model import Criteria, Estimate, RepSample
from harness.stats.spending import LookPlan
from harness.verdict import Verdict


def json_num(x: float) -> float | str:
    """A float for strict JSON: non-finite values become 'inf' / '-inf' / 'nan'."""
    return float(x) if math.isfinite(x) else str(float(x))


@dataclass(frozen=True)
class LookResult:
    """What one look measured; the cell logic (decision.py) combines looks."""

    pairs: int
    drop: Estimate
    gain: Estimate
    p50_base: float
    p50_acc: float
    thr_base: float
    thr_acc: float
    n_base: int
    n_acc: int
    level: float
    details: dict[str, object]


def _arm(reps: Sequence[RepSample]) -> Arm:
    return Arm.build([r.ttft for r in reps], [r.output_tokens for r in reps],
                     [r.wall_time for r in reps])


def criterion(lo: float, hi: float, threshold: float) -> Verdict:
    """PASS if the whole interval clears the threshold, STOP-LOSS if it all misses."""
    if lo >= threshold:
        return Verdict.PASS
    if hi < threshold:
        return Verdict.STOP_LOSS
    return Verdict.INCONCLUSIVE


def point_values(baseline: Sequence[RepSample],
                 accelerated: Sequence[RepSample]) -> tuple[float, float, float, float]:
    """p50_base, p50_acc (pooled, inf-aware) and thr_base, thr_acc (summed)."""
    def thr(reps: Sequence[RepSample]) -> float:
        return sum(r.output_tokens for r in reps) / sum(r.wall_time for r in reps)

    pooled_b = np.concatenate([np.asarray(r.ttft, dtype=np.float64) for r in baseline])
    pooled_a = np.concatenate([np.asarray(r.ttft, dtype=np.float64) for r in accelerated])
    return (percentile(pooled_b, 50.0), percentile(pooled_a, 50.0), thr(baseline),
            thr(accelerated))


def evaluate_look(baseline: Sequence[RepSample], accelerated: Sequence[RepSample],
                  criteria: Criteria, plan: LookPlan, index: int, n_boot: int,
                  seed: int) -> LookResult:
    """Intervals for drop and gain at plan.looks[index] pairs (inputs already checked)."""
    n = plan.looks[index]
    base, acc = _arm(baseline[:n]), _arm(accelerated[:n])
    p50_b, p50_a, thr_b, thr_a = point_values(baseline[:n], accelerated[:n])
    boot_seed, within_seed = (int(s) for s in
                              np.random.SeedSequence([seed, n]).generate_state(2))
    reps = paired_bootstrap(base, acc, n_boot, boot_seed)
    within = within_only(base, acc, n_boot, within_seed)
    v_ttft = ttft_variance(reps.log_ratio, within, n)
    v_gain = gain_variance(reps.log_gain, n)
    critical = plan.critical[index]
    r = log_interval(math.log(p50_a) - math.log(p50_b), reps.log_ratio, v_ttft["used"],
                     critical)
    g = log_interval(math.log(thr_a) - math.log(thr_b), reps.log_gain, v_gain, critical)
    details: dict[str, object] = {
        "pairs": n, "t_critical": json_num(critical), "df": n - 1,
        "alpha_spent": plan.spent[index], "alpha_nominal": plan.nominal[index],
        "z_boundary": json_num(plan.z[index]),
        "variance_log": {k: json_num(v) for k, v in v_ttft.items()} | {
            "gain": json_num(v_gain)},
        "nonfinite_replicates": {"ttft": r.nonfinite, "gain": g.nonfinite},
    }
    return LookResult(n, _drop(r, criteria), _gain(g, criteria), p50_b, p50_a, thr_b, thr_a,
                      int(base.sorted_ttft.size), int(acc.sorted_ttft.size),
                      1.0 - 2.0 * plan.nominal[index], details)


def _drop(r: LogInterval, c: Criteria) -> Estimate:
    value, lo, hi = -exp_minus_one(r.est), -exp_minus_one(r.hi), -exp_minus_one(r.lo)
    return Estimate(value, lo, hi, criterion(lo, hi, c.ttft_p50_drop))


def _gain(g: LogInterval, c: Criteria) -> Estimate:
    value, lo, hi = exp_minus_one(g.est), exp_minus_one(g.lo), exp_minus_one(g.hi)
    return Estimate(value, lo, hi, criterion(lo, hi, c.throughput_gain))
