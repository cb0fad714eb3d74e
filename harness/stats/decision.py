"""The G3 decision for one layout x tier cell, look by look.

drop = 1 - p50_acc / p50_base (TTFT p50 over the pooled requests of all repetitions of
an arm, a failed request counting as +inf) and gain = thr_acc / thr_base - 1 (summed
output tokens over summed wall time). At every planned look each criterion gets an
interval at the level the alpha spending allows that look (spending.py, look.py). Each
criterion is its own group-sequential test: once its interval clears the threshold it
has passed and stays passed (the error for it is spent), and the cell goes on until the
other one clears too. So a cell at look k is decided by replaying looks 1..k, which is
cheap and deterministic (each look's random stream comes from the cell seed and the
look). Pure: no I/O, no store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.errors import MeasurementError
from harness.reasons import Reason
from harness.stats.bootstrap import percentile
from harness.stats.look import LookResult, evaluate_look, json_num, point_values
from harness.stats.model import CellDecision, Criteria, Estimate, RepSample
from harness.stats.spending import LookPlan, Spending, check_looks, look_plan
from harness.verdict import SIGNOFF_REASON, Verdict

STAGE = "g3-decision"
MIN_BOOT = 200
_OPEN = Verdict.INCONCLUSIVE


def _plan(looks: Sequence[int], confidence: float, spending: Spending,
          plan: LookPlan | None) -> LookPlan:
    """The given plan if it is the plan of these arguments, else a fresh one."""
    if plan is None:
        return look_plan(looks, confidence, spending)
    if (plan.looks != tuple(check_looks(looks)) or plan.spending is not spending
            or not math.isclose(plan.budget, 1.0 - confidence)):
        raise MeasurementError(f"the precomputed plan ({list(plan.looks)}, confidence "
                               f"{1 - plan.budget:g}) is not the plan of this call",
                               stage=STAGE)
    return plan


def _check(baseline: Sequence[RepSample], accelerated: Sequence[RepSample], look: int,
           n_boot: int) -> None:
    """Refuse input that cannot be a measured cell (a harness bug, not evidence)."""
    def bad(msg: str) -> MeasurementError:
        return MeasurementError(msg, stage=STAGE)

    if n_boot < MIN_BOOT:
        raise bad(f"n_boot must be >= {MIN_BOOT}, got {n_boot}")
    if not baseline or not accelerated:
        raise bad("no repetitions to decide on")
    if len(baseline) != len(accelerated):
        raise bad(f"unequal repetition counts: baseline {len(baseline)}, "
                  f"accelerated {len(accelerated)} (repetitions are pairs)")
    if len(baseline) != look:
        raise bad(f"look {look} but {len(baseline)} repetition pairs given")
    for arm, reps in (("baseline", baseline), ("accelerated", accelerated)):
        for i, rep in enumerate(reps, 1):
            t = np.asarray(rep.ttft, dtype=np.float64)
            where = f"{arm} repetition {i}"
            if t.size == 0:
                raise bad(f"{where}: no requests")
            if np.isnan(t).any() or (t < 0).any():
                raise bad(f"{where}: TTFT must be >= 0 or +inf for a failure (found nan/<0)")
            if not math.isfinite(rep.wall_time) or rep.wall_time <= 0:
                raise bad(f"{where}: wall time must be > 0 s, got {rep.wall_time}")
            if rep.output_tokens < 0:
                raise bad(f"{where}: negative output tokens {rep.output_tokens}")


def _degenerate(baseline: Sequence[RepSample], accelerated: Sequence[RepSample],
                criteria: Criteria) -> tuple[str, Reason] | None:
    """Valid input that cannot support a decision either way (never PASS, never STOP-LOSS)."""
    for arm, reps in (("baseline", baseline), ("accelerated", accelerated)):
        for i, rep in enumerate(reps, 1):
            t = np.asarray(rep.ttft, dtype=np.float64)
            failed = int(np.isinf(t).sum())
            if failed > criteria.max_failed_share * t.size:
                share = f"{criteria.max_failed_share:.0%}"
                return (f"{arm} repetition {i}: {failed} of {t.size} requests failed "
                        f"(> {share}); check the engine before comparing",
                        Reason("cell.rep_failed", {"arm": arm, "rep": i, "failed": failed,
                                                   "total": int(t.size), "share": share}))
        if sum(r.output_tokens for r in reps) == 0:
            return (f"{arm}: no output tokens counted in any repetition",
                    Reason("cell.no_tokens", {"arm": arm}))
    return None


def _rule(c: Criteria, level: float, index: int, plan: Sequence[int],
          spending: Spending) -> str:
    return (f"PASS iff lower bound of drop CI >= {c.ttft_p50_drop:g} and lower bound of "
            f"gain CI >= {c.throughput_gain:g} (each at the first look it clears); "
            f"STOP-LOSS if the upper bound of either CI is below its threshold; else "
            f"INCONCLUSIVE (more pairs until {plan[-1]}). CIs: two-sided {level:.4f} at "
            f"look {index + 1} of {len(plan)} ({plan[index]} pairs; Lan-DeMets "
            f"{spending.value} alpha spending, Student t with {plan[index] - 1} df). A PASS "
            f"whose gain estimate exceeds {c.band_top:g} is INCONCLUSIVE: {SIGNOFF_REASON}")


def _per_rep(reps: Sequence[RepSample]) -> dict[str, list[float | str] | list[int]]:
    return {
        "ttft_p50": [json_num(percentile(r.ttft, 50.0)) for r in reps],
        "throughput": [json_num(r.output_tokens / r.wall_time) for r in reps],
        "requests": [int(np.asarray(r.ttft).size) for r in reps],
        "failed": [int(np.isinf(np.asarray(r.ttft, dtype=np.float64)).sum()) for r in reps],
    }


def _show(name: str, e: Estimate, threshold: float, at: int | None = None) -> str:
    where = f" (cleared at {at} pairs)" if at is not None else ""
    return f"{name} {e.value:.3f} CI [{e.lo:.3f}, {e.hi:.3f}] vs {threshold:g}{where}"


def _why(name: str, e: Estimate, threshold: float, at: int | None = None) -> Reason:
    """_show as a Reason (the same numbers, formatted the same way)."""
    params: dict[str, str | int | float | Reason] = {
        "criterion": name, "value": f"{e.value:.3f}", "lo": f"{e.lo:.3f}",
        "hi": f"{e.hi:.3f}", "threshold": f"{threshold:g}"}
    if at is None:
        return Reason("cell.estimate", params)
    return Reason("cell.estimate_at", {**params, "pairs": at})


class _Cell:
    """Replays a cell's looks in order, carrying which criterion has already passed."""

    def __init__(self, baseline: Sequence[RepSample], accelerated: Sequence[RepSample],
                 criteria: Criteria, plan: LookPlan, n_boot: int, seed: int,
                 confidence: float) -> None:
        self.baseline, self.accelerated = baseline, accelerated
        self.c, self.plan, self.n_boot, self.seed = criteria, plan, n_boot, seed
        self.confidence = confidence
        self.passed: dict[str, tuple[Estimate, int]] = {}

    def _common(self, index: int, n: int) -> dict[str, object]:
        return {
            "seed": self.seed, "n_boot": self.n_boot, "confidence": self.confidence,
            "alpha_budget": self.plan.budget, "alpha": self.plan.alpha,
            "spending": self.plan.spending.value,
            "looks": list(self.plan.looks), "look_index": index,
            "per_rep": {"baseline": _per_rep(self.baseline[:n]),
                        "accelerated": _per_rep(self.accelerated[:n])},
        }

    def _decision(self, res: LookResult, index: int, verdict: Verdict,
                  reason: tuple[str, Reason], signoff: bool, final: bool, drop: Estimate,
                  gain: Estimate, details: dict[str, object]) -> CellDecision:
        return CellDecision(
            verdict=verdict, reason=reason[0], why=reason[1], needs_signoff=signoff,
            final=final, drop=drop,
            gain=gain, ttft_p50_baseline=res.p50_base, ttft_p50_accelerated=res.p50_acc,
            thr_baseline=res.thr_base, thr_accelerated=res.thr_acc, n_baseline=res.n_base,
            n_accelerated=res.n_acc, repetitions=res.pairs, level=res.level,
            rule=_rule(self.c, res.level, index, self.plan.looks, self.plan.spending),
            details=details)

    def _degenerate_at(self, index: int, problem: tuple[str, Reason]) -> CellDecision:
        n = self.plan.looks[index]
        b, a = self.baseline[:n], self.accelerated[:n]
        p50_b, p50_a, thr_b, thr_a = point_values(b, a)
        finite = math.isfinite(p50_b) and math.isfinite(p50_a)
        drop = Estimate(1.0 - p50_a / p50_b if finite else math.nan, -math.inf, math.inf,
                        _OPEN)
        gain = Estimate(thr_a / thr_b - 1.0 if thr_b > 0 else math.nan, -math.inf,
                        math.inf, _OPEN)
        level = 1.0 - 2.0 * self.plan.nominal[index]
        res = LookResult(n, drop, gain, p50_b, p50_a, thr_b, thr_a,
                         sum(np.asarray(r.ttft).size for r in b),
                         sum(np.asarray(r.ttft).size for r in a), level, {})
        return self._decision(res, index, _OPEN, problem, False, True, drop, gain,
                              self._common(index, n))

    def at(self, index: int) -> CellDecision:
        """The decision at plan.looks[index], given the looks before it were replayed."""
        n = self.plan.looks[index]
        problem = _degenerate(self.baseline[:n], self.accelerated[:n], self.c)
        if problem is not None:
            return self._degenerate_at(index, problem)
        res = evaluate_look(self.baseline, self.accelerated, self.c, self.plan, index,
                            self.n_boot, self.seed)
        current = {"drop": res.drop, "gain": res.gain}
        for name, e in current.items():
            if name not in self.passed and e.verdict is Verdict.PASS:
                self.passed[name] = (e, n)
        drop = self.passed.get("drop", (res.drop, n))[0]
        gain = self.passed.get("gain", (res.gain, n))[0]
        at = {k: v[1] for k, v in self.passed.items()}
        details = self._common(index, n) | res.details | {
            "decided_at": {"drop": at.get("drop"), "gain": at.get("gain")},
            "current": {k: {"value": json_num(e.value), "lo": json_num(e.lo),
                            "hi": json_num(e.hi), "verdict": e.verdict.value}
                        for k, e in current.items()},
        }
        verdict, reason, signoff, final = self._combine(index, drop, gain, current, at)
        return self._decision(res, index, verdict, reason, signoff, final, drop, gain,
                              details)

    def _combine(self, index: int, drop: Estimate, gain: Estimate,
                 current: dict[str, Estimate],
                 at: dict[str, int]) -> tuple[Verdict, tuple[str, Reason], bool, bool]:
        """(verdict, (the reason in English, the same as a Reason), sign-off, final)."""
        c, n = self.c, self.plan.looks[index]
        applied = [k for k in ("drop", "gain") if k in c.applied]
        for name, th in (("drop", c.ttft_p50_drop), ("gain", c.throughput_gain)):
            if name in applied and name in at and current[name].verdict is Verdict.STOP_LOSS:
                return (_OPEN, (f"{name} cleared {th:g} at {at[name]} pairs but its interval "
                                f"at {n} pairs lies below it: the cell is not stationary; "
                                "investigate before deciding",
                                Reason("cell.not_stationary", {
                                    "criterion": name, "threshold": f"{th:g}",
                                    "at": at[name], "pairs": n})), False, True)
        texts = {"drop": _show("drop", drop, c.ttft_p50_drop, at.get("drop")),
                 "gain": _show("gain", gain, c.throughput_gain, at.get("gain"))}
        whys = {"drop": _why("drop", drop, c.ttft_p50_drop, at.get("drop")),
                "gain": _why("gain", gain, c.throughput_gain, at.get("gain"))}
        failing = [k for k, e in current.items()
                   if k in applied and e.verdict is Verdict.STOP_LOSS]
        if failing:
            return Verdict.STOP_LOSS, (
                "below threshold: " + "; ".join(texts[k] for k in failing),
                Reason("cell.below", parts=tuple(whys[k] for k in failing))), False, True
        if all(k in at for k in applied):
            if "gain" in applied and current["gain"].value > c.band_top:
                return _OPEN, (SIGNOFF_REASON, Reason("cell.above_band")), True, True
            shown = "; ".join(texts[k] for k in applied)
            parts = tuple(whys[k] for k in applied)
            if len(applied) == 2:
                return Verdict.PASS, ("both clear: " + shown,
                                      Reason("cell.both_clear", parts=parts)), False, True
            return Verdict.PASS, (f"{applied[0]} clears (the only criterion applied): "
                                  + shown, Reason("cell.only_clears",
                                                  {"criterion": applied[0]}, parts)), \
                False, True
        last = index == len(self.plan.looks) - 1
        open_ = [k for k in applied if k not in at]
        reason = "interval straddles threshold: " + "; ".join(texts[k] for k in open_)
        reason += (f"; last planned look ({n} pairs) reached" if last else
                   f"; add pairs (next look at {self.plan.looks[index + 1]})")
        look = Reason("cell.last_look", {"pairs": n}) if last else \
            Reason("cell.next_look", {"pairs": self.plan.looks[index + 1]})
        why = Reason("cell.straddles", parts=(*(whys[k] for k in open_), look))
        return _OPEN, (reason, why), False, last


def decide_looks(baseline: Sequence[RepSample], accelerated: Sequence[RepSample],
                 criteria: Criteria, *, confidence: float = 0.95, look: int,
                 looks: Sequence[int], n_boot: int = 2000, seed: int,
                 spending: Spending = Spending.OBRIEN_FLEMING,
                 plan: LookPlan | None = None) -> list[CellDecision]:
    """The cell's decision at each planned look up to `look`, ending at the first final one."""
    lp = _plan(looks, confidence, spending, plan)
    index = lp.index(look)
    _check(baseline, accelerated, look, n_boot)
    if not criteria.applied or not set(criteria.applied) <= {"drop", "gain"}:
        raise MeasurementError(f"criteria to apply must be drop and/or gain, got "
                               f"{criteria.applied!r}", stage=STAGE)
    cell = _Cell(baseline, accelerated, criteria, lp, n_boot, seed, confidence)
    out: list[CellDecision] = []
    for j in range(index + 1):
        out.append(cell.at(j))
        if out[-1].final:
            break
    return out


def decide_cell(baseline: Sequence[RepSample], accelerated: Sequence[RepSample],
                criteria: Criteria, *, confidence: float = 0.95, look: int,
                looks: Sequence[int], n_boot: int = 2000, seed: int,
                spending: Spending = Spending.OBRIEN_FLEMING,
                plan: LookPlan | None = None) -> CellDecision:
    """PASS / STOP-LOSS / INCONCLUSIVE for one cell after `look` repetition pairs.

    1 - confidence is the one-sided wrong-PASS budget over all planned looks (the
    STOP-LOSS side gets the same); the looks spend 80 % of it (ALPHA_RESERVE). Pass the
    cell's seed, the same at every look. `plan` = look_plan(looks, confidence) may be
    passed to skip recomputing it (~60 ms).
    A cell that was already final at an earlier look returns that look's decision.
    Raises MeasurementError for input that cannot be a measurement; returns a final
    INCONCLUSIVE for valid but undecidable data (see docs/g3-statistics.md).
    """
    return decide_looks(baseline, accelerated, criteria, confidence=confidence, look=look,
                        looks=looks, n_boot=n_boot, seed=seed, spending=spending,
                        plan=plan)[-1]
