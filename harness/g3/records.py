"""What G3 writes to the store and reads back on a resume: one arm's measured phase
(ArmRep), the phase parameters, the cell's decision row; whether a pair's engines may be
compared (pair_identity)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.config.models import SiteConfig
from harness.errors import MeasurementError
from harness.loadgen.records import RequestRecord
from harness.serving.cells import ARMS, Cell
from harness.serving.identity import compare_arms
from harness.serving.phases import PhaseTokens, finite, json_dict, phase_tokens
from harness.serving.problems import JSONDict, Problem, ProblemKind
from harness.stats.model import CellDecision
from harness.store import Store, writer


@dataclass
class ArmRep:
    """One arm's measured phase of one repetition, as the decision needs it."""

    ttft: np.ndarray
    lengths: PhaseTokens
    wall_time: float
    evidence: JSONDict
    benchmark_id: int
    # The engines' facts right after the cold restart (harness/serving/identity.py), and why
    # some could not be read.
    facts: list[dict[str, str]] = field(default_factory=list)
    fact_problems: list[str] = field(default_factory=list)
    # Why the phase's own client was saturated ('' when it was not): such a phase
    # cannot decide the cell (harness/loadgen/health.py).
    saturation: str = ""

    @property
    def output_tokens(self) -> int:
        """Tokens the throughput counts: the fixed length x responses that reached it."""
        return self.lengths.tokens


def ttfts(records: Sequence[RequestRecord]) -> np.ndarray:
    vals = [r.ttft if r.ok and r.ttft is not None else np.inf
            for r in records if not r.warmup]
    if not vals:
        raise MeasurementError("measured phase produced no requests", stage="measured")
    return np.asarray(vals, dtype=float)


def completed_reps(store: Store, run_id: int, cell: Cell,
                   fixed: int) -> dict[int, dict[str, ArmRep]]:
    """For `gate resume`: the pairs whose both measured phases finished in this run, read
    back exactly as they were judged when measured."""
    found: dict[int, dict[str, ArmRep]] = {}
    for b in writer.benchmarks(store, run_id):
        if (b.layout, b.tier, b.phase, b.status) != (cell.layout.name, cell.tier, "measured",
                                                     "FINISHED"):
            continue
        records = [RequestRecord.from_row(r) for r in writer.requests(store, b.id)]
        identity = b.summary.get("identity") or {}
        health = b.summary.get("health") or {}
        found.setdefault(b.repetition, {})[b.arm] = ArmRep(
            ttfts(records), phase_tokens(records, fixed), float(b.duration or 0.0),
            dict(b.summary.get("evidence", {})), b.id,
            list(identity.get("facts") or []), list(identity.get("problems") or []),
            "; ".join(str(r) for r in health.get("reasons") or []))
    return {rep: pair for rep, pair in found.items() if set(pair) == set(ARMS)}


def store_cell(store: Store, run_id: int, cfg: SiteConfig, cell: Cell, d: CellDecision,
               reps: list[dict[str, ArmRep]], override: str | Problem = "",
               override_verdict: str = "INCONCLUSIVE") -> None:
    """The cell's row. `override`: why the cell is not decided by `d` (a Problem keeps its
    code for the report, details.why; a string is stored as written)."""
    said = override.text if isinstance(override, Problem) else override
    why = override.why if isinstance(override, Problem) else None if override else d.why
    writer.upsert_cell(store, run_id, {
        "layout": cell.layout.name, "tier": cell.tier,
        "verdict": override_verdict if said else d.verdict.value,
        "reason": said or d.reason, "repetitions": d.repetitions,
        "n_baseline": d.n_baseline, "n_accelerated": d.n_accelerated,
        "ttft_p50_baseline": finite(d.ttft_p50_baseline),
        "ttft_p50_accelerated": finite(d.ttft_p50_accelerated),
        "drop": finite(d.drop.value), "drop_lo": finite(d.drop.lo),
        "drop_hi": finite(d.drop.hi), "thr_baseline": d.thr_baseline,
        "thr_accelerated": d.thr_accelerated, "gain": finite(d.gain.value),
        "gain_lo": finite(d.gain.lo), "gain_hi": finite(d.gain.hi),
        "confidence": cfg.gates.g3.confidence, "rule": d.rule,
        "details": {**json_dict(d.details), "needs_signoff": d.needs_signoff,
                    "level": d.level, "drop_verdict": d.drop.verdict.value,
                    "gain_verdict": d.gain.verdict.value,
                    "evidence": [{arm: p[arm].evidence for arm in ARMS} for p in reps],
                    **({"why": why.as_json()} if why is not None else {})},
    })


def pair_identity(pair: Mapping[str, ArmRep], differs_by: Sequence[str]) -> Problem | None:
    """None when the pair's engines, read after their cold restarts, differ only as
    `differs_by` (arms.accelerated.differs_by) allows; else why the arms cannot be
    compared."""
    problems = pair["baseline"].fact_problems + pair["accelerated"].fact_problems
    if problems:
        return Problem(ProblemKind.ENGINES_UNVERIFIED,
                       f"engines not verified: {'; '.join(problems)}")
    diff = compare_arms(pair["baseline"].facts, pair["accelerated"].facts, differs_by)
    return None if diff.equal else Problem(ProblemKind.ENGINES_DIFFER, diff.summary())
