"""decide_cell on known cells: the rule, the band, failures, degenerate input, seeds."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from harness.errors import MeasurementError
from harness.report import reasons
from harness.report.i18n import translator
from harness.stats import (
    CellDecision,
    Criteria,
    Estimate,
    RepSample,
    decide_cell,
    decide_looks,
    planned_looks,
)
from harness.stats.decision import _Cell
from harness.stats.spending import look_plan
from harness.verdict import SIGNOFF_REASON, Verdict

LOOKS = planned_looks(3, 8)
PLAN = look_plan(LOOKS, 0.95)
SEED = Criteria(ttft_p50_drop=0.25, throughput_gain=0.29, band_top=0.40,
                max_failed_share=0.02)  # the site config's defaults


def cell(seed: int, drop: float, gain: float, *, pairs: int = 8, m: int = 64,
         sigma: float = 0.3, fail_acc: float = 0.0) -> tuple[list[RepSample], list[RepSample]]:
    """Synthetic pairs: lognormal TTFT, shared drift per pair, small independent noise."""
    rng = np.random.default_rng(seed)
    base: list[RepSample] = []
    acc: list[RepSample] = []
    for _ in range(pairs):
        shared = rng.normal(0, 0.1)
        for out, f_t, f_g, fail in ((base, 1.0, 1.0, 0.0), (acc, 1 - drop, 1 + gain, fail_acc)):
            own = rng.normal(0, 0.02)
            ttft = 2.0 * f_t * np.exp(shared + own + rng.normal(0, sigma, m))
            ttft[rng.random(m) < fail] = np.inf
            thr = 1000.0 * f_g * math.exp(-shared - own + rng.normal(0, 0.01))
            tokens = 128 * int(np.isfinite(ttft).sum())
            out.append(RepSample(ttft=ttft, output_tokens=tokens, wall_time=tokens / thr))
    return base, acc


def decide(base: list[RepSample], acc: list[RepSample], look: int | None = None,
           seed: int = 1, criteria: Criteria | None = None) -> CellDecision:
    look = len(base) if look is None else look
    return decide_cell(base[:look], acc[:look], criteria or SEED, look=look,
                       looks=LOOKS, seed=seed, plan=PLAN)


def test_clear_pass() -> None:
    d = decide(*cell(1, drop=0.45, gain=0.34))
    assert d.verdict is Verdict.PASS
    assert d.final and not d.needs_signoff
    assert d.drop.verdict is Verdict.PASS and d.drop.lo >= 0.25
    assert d.gain.verdict is Verdict.PASS and 0.29 <= d.gain.lo <= d.gain.value <= d.gain.hi
    assert d.repetitions < 8            # clear evidence stops early
    assert d.n_baseline == d.n_accelerated == d.repetitions * 64
    current = d.details["current"]
    assert isinstance(current, dict)
    assert current["drop"]["value"] == pytest.approx(
        1 - d.ttft_p50_accelerated / d.ttft_p50_baseline)
    assert current["gain"]["value"] == pytest.approx(d.thr_accelerated / d.thr_baseline - 1)
    assert d.reason.startswith("both clear")
    assert d.rule.startswith("PASS iff lower bound of drop CI >= 0.25")


def test_each_criterion_keeps_the_look_that_cleared_it() -> None:
    """The drop clears early, the gain (close to its threshold) only later: the cell
    passes when the second one clears, reporting each interval from its own look."""
    base, acc = cell(15, drop=0.5, gain=0.33)
    history = decide_looks(base, acc, SEED, look=8, looks=LOOKS, seed=3, plan=PLAN)
    last = history[-1]
    assert last.verdict is Verdict.PASS
    at = last.details["decided_at"]
    assert isinstance(at, dict)
    assert at["drop"] < at["gain"] == last.repetitions
    first = next(h for h in history if h.repetitions == at["drop"])
    assert last.drop == first.drop                       # the deciding interval
    assert all(h.verdict is Verdict.INCONCLUSIVE and not h.final for h in history[:-1])
    assert decide_cell(base, acc, SEED, look=8, looks=LOOKS, seed=3) == last


def test_clear_fail_is_stop_loss() -> None:
    d = decide(*cell(2, drop=0.0, gain=0.0), look=8)
    assert d.verdict is Verdict.STOP_LOSS
    assert d.final and d.repetitions < 8
    assert d.drop.hi < 0.25 or d.gain.hi < 0.29
    assert d.reason.startswith("below threshold")


def test_one_failing_criterion_is_enough_for_stop_loss() -> None:
    d = decide(*cell(3, drop=0.5, gain=-0.1))
    assert d.verdict is Verdict.STOP_LOSS
    assert d.gain.verdict is Verdict.STOP_LOSS and d.drop.verdict is not Verdict.STOP_LOSS
    assert "gain" in d.reason and "drop" not in d.reason


def test_near_threshold_is_inconclusive_and_only_final_at_the_last_look() -> None:
    base, acc = cell(4, drop=0.25, gain=0.34, sigma=0.5)
    early = decide(base, acc, look=5)
    assert early.verdict is Verdict.INCONCLUSIVE
    assert not early.final and not early.needs_signoff
    assert early.drop.lo < 0.25 <= early.drop.hi
    assert "next look at 6" in early.reason
    last = decide(base, acc, look=8)
    assert last.verdict is Verdict.INCONCLUSIVE and last.final
    assert "last planned look (8 pairs) reached" in last.reason


def test_above_band_needs_signoff() -> None:
    d = decide(*cell(5, drop=0.45, gain=0.6))
    assert d.verdict is Verdict.INCONCLUSIVE
    assert d.needs_signoff and d.final
    assert d.reason == SIGNOFF_REASON == "above band: needs sign-off"
    assert d.drop.verdict is Verdict.PASS and d.gain.verdict is Verdict.PASS


def test_failed_requests_count_as_infinitely_slow() -> None:
    """40 % failures in the accelerated arm: its p50 moves up to the 83rd percentile of
    its successful requests, which eats the 0.45 drop; dropping them would PASS."""
    base, acc = cell(6, drop=0.45, gain=0.34, fail_acc=0.4)
    # The statistic itself, with the failed-share guard opened (a site cannot open it).
    d = decide(base, acc, criteria=dataclasses.replace(SEED, max_failed_share=0.5))
    finite = np.concatenate([r.ttft[np.isfinite(r.ttft)] for r in acc])
    assert d.ttft_p50_accelerated > float(np.median(finite)) * 1.2
    assert d.verdict is not Verdict.PASS
    assert d.n_accelerated == 8 * 64  # nothing dropped
    dropped = [RepSample(r.ttft[np.isfinite(r.ttft)], r.output_tokens, r.wall_time)
               for r in acc]
    assert decide(base, dropped).verdict is Verdict.PASS
    assert decide(base, dropped).drop.value > d.drop.value + 0.1


def test_a_crashed_phase_is_never_pass_nor_stop_loss() -> None:
    base, acc = cell(7, drop=0.45, gain=0.34)
    dead = [*acc[:3], RepSample(np.full(64, np.inf), 0, 30.0), *acc[4:]]
    d = decide(base, dead)
    assert d.verdict is Verdict.INCONCLUSIVE and d.final
    assert d.reason.startswith("accelerated repetition 4: 64 of 64 requests failed")


def test_all_failed_on_both_arms_is_inconclusive() -> None:
    dead = [RepSample(np.full(16, np.inf), 0, 10.0) for _ in range(3)]
    d = decide(dead, dead, look=3)
    assert d.verdict is Verdict.INCONCLUSIVE and d.final
    assert math.isnan(d.drop.value)


def test_zero_output_tokens_is_inconclusive() -> None:
    base, acc = cell(8, drop=0.45, gain=0.34, pairs=3)
    zero = [RepSample(r.ttft, 0, r.wall_time) for r in base]
    d = decide(zero, acc)
    assert d.verdict is Verdict.INCONCLUSIVE and d.final
    assert "baseline: no output tokens" in d.reason


def test_decisions_are_deterministic_by_seed() -> None:
    base, acc = cell(9, drop=0.3, gain=0.33)
    a, b, c = decide(base, acc, seed=42), decide(base, acc, seed=42), decide(base, acc, seed=43)
    assert a == b
    assert (a.drop.lo, a.gain.lo) != (c.drop.lo, c.gain.lo)
    assert a.details["seed"] == 42


def test_level_and_plan_facts_per_look() -> None:
    base, acc = cell(10, drop=0.3, gain=0.33)
    levels = [decide(base, acc, look=k).level for k in LOOKS]
    assert levels == sorted(levels, reverse=True)   # early looks demand more confidence
    assert all(0.9 < lv < 1.0 for lv in levels)
    fresh = decide_cell(base, acc, SEED, look=8, looks=LOOKS, seed=1)
    assert fresh == decide(base, acc, look=8)       # a passed plan changes nothing


def test_details_are_json_able() -> None:
    base, acc = cell(11, drop=0.45, gain=0.34, fail_acc=0.02)
    d = decide(base, acc, criteria=dataclasses.replace(SEED, max_failed_share=0.05))
    text = json.dumps(d.details, allow_nan=False)
    back = json.loads(text)
    assert back["n_boot"] == 2000 and back["looks"] == LOOKS
    assert back["df"] == back["pairs"] - 1 == d.repetitions - 1
    assert len(back["per_rep"]["accelerated"]["ttft_p50"]) == d.repetitions
    assert 0 < back["alpha_spent"] <= 0.05 + 1e-12


@pytest.mark.parametrize("case", ["unequal", "empty", "zero_wall", "nan", "negative",
                                  "unplanned", "look_mismatch", "no_requests", "plan"])
def test_impossible_input_raises_measurement_error(case: str) -> None:
    base, acc = cell(12, drop=0.3, gain=0.33, pairs=4)
    look = 4
    looks = LOOKS
    if case == "unequal":
        acc = acc[:3]
    elif case == "empty":
        base, acc = [], []
    elif case == "zero_wall":
        base[1] = RepSample(base[1].ttft, base[1].output_tokens, 0.0)
    elif case == "nan":
        t = base[0].ttft.copy()
        t[3] = np.nan
        base[0] = RepSample(t, base[0].output_tokens, base[0].wall_time)
    elif case == "negative":
        acc[2] = RepSample(-acc[2].ttft, acc[2].output_tokens, acc[2].wall_time)
    elif case == "unplanned":
        looks = [5, 8]
    elif case == "look_mismatch":
        look = 3
    elif case == "no_requests":
        acc[0] = RepSample(np.array([]), 0, 1.0)
    with pytest.raises(MeasurementError):
        decide_cell(base, acc, SEED, look=look, looks=looks, seed=1,
                    plan=PLAN if case == "plan" or looks == LOOKS else None,
                    confidence=0.9 if case == "plan" else 0.95)


def test_a_cleared_criterion_contradicted_later_is_not_decided() -> None:
    """Edge case of the replay: the drop cleared at 4 pairs, but at 7 its interval lies
    wholly below the threshold (the cell drifted). Neither PASS nor STOP-LOSS."""
    base, acc = cell(14, drop=0.3, gain=0.33, pairs=7)
    c = _Cell(base, acc, SEED, PLAN, 2000, 1, 0.95)
    cleared = Estimate(0.40, 0.30, 0.50, Verdict.PASS)
    now = Estimate(0.10, 0.02, 0.18, Verdict.STOP_LOSS)
    gain = Estimate(0.33, 0.28, 0.38, Verdict.INCONCLUSIVE)
    verdict, (reason, why), signoff, final = c._combine(
        4, cleared, gain, {"drop": now, "gain": gain}, {"drop": 4})
    assert verdict is Verdict.INCONCLUSIVE and final and not signoff
    assert reason.startswith("drop cleared 0.25 at 4 pairs but its interval at 7 pairs")
    assert why.code == "cell.not_stationary"
    assert reasons.say(translator("en"), why) == reason  # the catalogue says it alike


def test_a_final_earlier_look_is_kept() -> None:
    base, acc = cell(15, drop=0.5, gain=0.34)
    history = decide_looks(base, acc, SEED, look=8, looks=LOOKS, seed=2, plan=PLAN)
    assert history[-1].final and history[-1].repetitions < 8
    assert decide_cell(base, acc, SEED, look=8, looks=LOOKS, seed=2) == history[-1]


def test_a_criterion_not_applied_neither_passes_nor_fails_the_cell() -> None:
    """A layout judged on throughput only: a TTFT that misses its threshold does not stop
    it, and the cell passes on the gain alone (the config marks that as weaker)."""
    base, acc = cell(5, drop=0.05, gain=0.36)
    assert decide(base, acc).verdict is Verdict.STOP_LOSS
    gain_only = dataclasses.replace(SEED, applied=("gain",))
    d = decide(base, acc, criteria=gain_only)
    assert d.verdict is Verdict.PASS and "only criterion applied" in d.reason
    with pytest.raises(MeasurementError, match="drop and/or gain"):
        decide(base, acc, criteria=dataclasses.replace(SEED, applied=()))
