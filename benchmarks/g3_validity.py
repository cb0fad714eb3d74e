"""Validity of the G3 decision on synthetic cells (prints a table; seeds fixed).

Each trial simulates a whole cell the way the gate runs it: up to 8 ABBA repetition
pairs, a look after every planned pair count (3..8), stop at the first final decision.
The synthetic world (all knobs on the command line):

  TTFT per request   lognormal, median 2 s x (1 - true drop) for the accelerated arm,
                     log-sd --sigma (0.4)
  shared drift       per pair, lognormal log-sd --shared (0.10), the same factor on both
                     arms of a pair (they run back to back), on TTFT and on throughput
  independent drift  per arm and repetition, log-sd --indep (0.02), on TTFT and throughput
  throughput noise   per arm and repetition, log-sd --thr-noise (0.01) on top
  failures           per trial a rate in U(0.5 %, 2 %) x --fail-scale (1), same for both
                     arms; a failed request is +inf TTFT and produces no tokens; a phase
                     with more than --max-failed-share (the gate's 2 %) failed requests
                     blocks the decision, as the gate's guard does
  requests per rep   4 x concurrency: 16 / 32 / 64 for tiers 4 / 8 / 16

Goals (issue 7): true drop 0 -> never PASS; drop exactly 0.25 (gain comfortably
passing) -> PASS <= 5 %; gain exactly 0.29 (drop comfortably passing) -> PASS <= 5 %;
drop 0.35 and gain 0.35 -> PASS >= 90 % within 3..8 pairs and STOP-LOSS <= 1 %.

    .venv/bin/python benchmarks/g3_validity.py            # full table, ~2-4 min on 2 cores
    .venv/bin/python benchmarks/g3_validity.py --trials 50 --tiers 16
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from harness.config.models import G3
from harness.stats import Criteria, RepSample, decide_looks, planned_looks
from harness.stats.bootstrap import Arm, paired_bootstrap, within_only
from harness.stats.spending import LookPlan, Spending, look_plan
from harness.verdict import Verdict

MIN_REPS, MAX_REPS = 3, 8
OUT_TOKENS = 128        # output tokens per completed request
BASE_TTFT = 2.0         # s, baseline median TTFT
BASE_THR = 1000.0       # tok/s, baseline throughput

_DEFAULTS = G3()  # the decision settings a site gets unless it changes them
SEED = Criteria(ttft_p50_drop=_DEFAULTS.thresholds.ttft_p50_drop,
                throughput_gain=_DEFAULTS.thresholds.throughput_gain,
                band_top=_DEFAULTS.thresholds.band_top,
                max_failed_share=_DEFAULTS.evidence.max_failed_share)


@dataclass(frozen=True)
class World:
    sigma: float
    shared: float
    indep: float
    thr_noise: float
    fail_scale: float = 1.0
    max_failed_share: float = 0.02


@dataclass(frozen=True)
class Scenario:
    name: str
    drop: float
    gain: float
    goal: str           # "P=0", "P<=5", "P>=90"
    weight: int = 1     # trials = --trials x weight (the rows at an edge get more)


SCENARIOS = (
    Scenario("null (no effect)", 0.0, 0.0, "P=0"),
    Scenario("drop at threshold", 0.25, 0.35, "P<=5", 2),
    Scenario("gain at threshold", 0.35, 0.29, "P<=5", 2),
    Scenario("good (0.35 / 0.35)", 0.35, 0.35, "P>=90,S<=1", 2),
    Scenario("above band (gain 0.5)", 0.35, 0.50, "signoff"),
)


def simulate(rng: np.random.Generator, world: World, m: int, drop: float, gain: float,
             pairs: int = MAX_REPS) -> tuple[list[RepSample], list[RepSample]]:
    """`pairs` repetition pairs of one cell."""
    fail = rng.uniform(0.005, 0.02) * world.fail_scale
    base: list[RepSample] = []
    acc: list[RepSample] = []
    for _ in range(pairs):
        shared = rng.normal(0.0, world.shared)
        for out, f_ttft, f_thr in ((base, 1.0, 1.0), (acc, 1.0 - drop, 1.0 + gain)):
            own = rng.normal(0.0, world.indep)
            ttft = BASE_TTFT * f_ttft * np.exp(shared + own + rng.normal(0.0, world.sigma, m))
            failed = rng.random(m) < fail
            ttft[failed] = np.inf
            thr = BASE_THR * f_thr * math.exp(-shared - own + rng.normal(0.0, world.thr_noise))
            tokens = OUT_TOKENS * int(m - failed.sum())
            out.append(RepSample(ttft=ttft, output_tokens=tokens, wall_time=tokens / thr))
    return base, acc


def run_trial(args: tuple[int, World, int, Scenario, LookPlan]) -> tuple[str, bool, int]:
    """One cell through its looks: (verdict, needs_signoff, pairs used)."""
    seed, world, m, sc, plan = args
    rng = np.random.default_rng(seed)
    looks = list(plan.looks)
    base, acc = simulate(rng, world, m, sc.drop, sc.gain, looks[-1])
    # what the gate does: look after each planned pair count, stop at the first final one
    crit = replace(SEED, max_failed_share=world.max_failed_share)
    last = decide_looks(base, acc, crit, look=looks[-1], looks=looks, seed=seed,
                        confidence=1.0 - plan.budget, spending=plan.spending, plan=plan)[-1]
    return last.verdict.value, last.needs_signoff, last.repetitions


def speed() -> float:
    """Seconds for one bootstrap of 2000 resamples x 8 reps x 64 requests (both passes)."""
    rng = np.random.default_rng(0)
    ttfts = [rng.lognormal(0.0, 0.4, 64) for _ in range(8)]
    a = Arm.build(ttfts, [1000.0] * 8, [1.0] * 8)
    b = Arm.build([t * 0.7 for t in ttfts], [1300.0] * 8, [1.0] * 8)
    best = math.inf
    for i in range(5):
        t0 = time.perf_counter()
        paired_bootstrap(a, b, 2000, i)
        within_only(a, b, 2000, i)
        best = min(best, time.perf_counter() - t0)
    return best


def verdict_goal(goal: str, p: float, s: float) -> str:
    checks = {"P=0": p == 0.0, "P<=5": p <= 0.05, "P>=90,S<=1": p >= 0.90 and s <= 0.01,
              "signoff": p == 0.0}
    return "ok" if checks[goal] else "MISSED"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tiers", default="4,8,16", help="concurrency tiers (requests = 4 x c)")
    ap.add_argument("--requests", type=int, default=0, help="requests per rep (default 4 x c)")
    ap.add_argument("--seed-offset", type=int, default=0)
    ap.add_argument("--sigma", type=float, default=0.4)
    ap.add_argument("--shared", type=float, default=0.10)
    ap.add_argument("--indep", type=float, default=0.02)
    ap.add_argument("--thr-noise", type=float, default=0.01)
    ap.add_argument("--fail-scale", type=float, default=1.0,
                    help="scale the per-trial failure rate U(0.5 %%, 2 %%) (0: no failures)")
    ap.add_argument("--max-failed-share", type=float,
                    default=_DEFAULTS.evidence.max_failed_share,
                    help="the failed-request guard (the gate's default %(default)s)")
    ap.add_argument("--scenarios", default="", help="comma list of scenario indexes")
    ap.add_argument("--spending", default=Spending.OBRIEN_FLEMING.value,
                    choices=[s.value for s in Spending])
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--min-reps", type=int, default=MIN_REPS)
    ap.add_argument("--max-reps", type=int, default=MAX_REPS)
    ap.add_argument("--looks-every", type=int, default=1, help="look every k-th pair")
    opts = ap.parse_args()
    looks = planned_looks(opts.min_reps, opts.max_reps)
    if opts.looks_every > 1:  # a sparser schedule, always ending at max-reps
        looks = sorted({*looks[::opts.looks_every], looks[-1]})
    plan = look_plan(looks, opts.confidence, Spending(opts.spending))
    world = World(opts.sigma, opts.shared, opts.indep, opts.thr_noise, opts.fail_scale,
                  opts.max_failed_share)
    chosen = [SCENARIOS[int(i)] for i in opts.scenarios.split(",")] if opts.scenarios \
        else list(SCENARIOS)
    print(f"bootstrap 2000 x 8 reps x 64 requests (two-stage + within pass): "
          f"{speed() * 1000:.0f} ms")
    print(f"world: sigma={world.sigma} shared={world.shared} indep={world.indep} "
          f"thr_noise={world.thr_noise} failures x{world.fail_scale:g} guard "
          f"{world.max_failed_share:g}; looks {list(plan.looks)}, {plan.spending.value}; "
          f"{opts.trials} trials per row, x2 on the edge rows")
    print("t critical per look: " + ", ".join(f"{c:.2f}" for c in plan.critical)
          + "; nominal one-sided: " + ", ".join(f"{p:.4f}" for p in plan.nominal))
    head = (f"{'tier':>4} {'req':>4}  {'scenario':<22} {'drop':>5} {'gain':>5} {'n':>4}  "
            f"{'PASS':>6} {'STOP':>6} {'INCO':>6} {'sign':>6} {'pairs':>5}  goal")
    print(head)
    print("-" * len(head))
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for tier in (int(t) for t in opts.tiers.split(",")):
            m = opts.requests or 4 * tier
            for sc in chosen:
                k = SCENARIOS.index(sc)
                first = 1_000_003 * (k + 1) + 7919 * tier + opts.seed_offset
                jobs = [(first + i, world, m, sc, plan)
                        for i in range(opts.trials * sc.weight)]
                res = list(pool.map(run_trial, jobs, chunksize=8))
                count = Counter(v for v, _, _ in res)
                n = len(res)
                p = count[Verdict.PASS.value] / n
                s = count[Verdict.STOP_LOSS.value] / n
                i_ = count[Verdict.INCONCLUSIVE.value] / n
                sign = sum(1 for _, so, _ in res if so) / n
                pairs = float(np.mean([r for _, _, r in res]))
                print(f"{tier:>4} {m:>4}  {sc.name:<22} {sc.drop:>5.2f} {sc.gain:>5.2f} {n:>4}  "
                      f"{p:>6.1%} {s:>6.1%} {i_:>6.1%} {sign:>6.1%} {pairs:>5.2f}  "
                      f"{sc.goal} {verdict_goal(sc.goal, p, s)}", flush=True)
    print(f"elapsed {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
