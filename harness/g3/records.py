"""What G3 writes to the store and reads back on a resume: one arm's measured phase
(ArmRep), the phase parameters, the cell's decision row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from harness.config.models import SiteConfig
from harness.errors import MeasurementError
from harness.g3.plan import ARMS, Cell
from harness.g3.problems import JSON, JSONDict, Problem
from harness.g3.rules import FIXED_OUTPUT_BODY, PhaseTokens, phase_tokens
from harness.loadgen.health import HealthBounds
from harness.loadgen.phase import PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.loadgen.workloads import Workload
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
    # The engines' facts right after the cold restart (harness/g3/identity.py), and why
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


def fixed_output_body(ignore_eos: bool) -> dict[str, bool]:
    """What G3 adds to each request to fix its output length: `ignore_eos` only for an
    engine whose profile honours it (harness.loadgen.engines); another engine gets a
    standard request, and the length check then says the length was not fixed."""
    return dict(FIXED_OUTPUT_BODY) if ignore_eos else {}


# A simulated engine's stall adds its own length to a phase: 0.15 s in a 0.8 s phase moves
# that pair's gain by about 0.15, where G3's gains sit a few points from their threshold
# (the demo's 0.35 against 0.29; seen in a fresh clone's demo: three such stalls of
# 14-19 %, under load.health's 25 %, left a cell INCONCLUSIVE on a quiet machine). So a G3
# pair is measured again past a 10 % stall, whatever load.health allows (tightening
# only). G2's serving baseline keeps the site's bound: its CV limit is wider, and its
# 0.24 s demo phases show 10-15 % wakes on a quiet machine.
G3_MAX_SIM_LAG_SHARE = 0.10


def phase_spec(cfg: SiteConfig, tier: int, endpoints: list[Endpoint],
               specs: list[RequestSpec], ignore_eos: bool = True,
               sim_lag_cap: float | None = G3_MAX_SIM_LAG_SHARE) -> PhaseSpec:
    """A G3 phase (warm or measured, the same documents): closed loop at the tier, every
    request asking the fixed output length, stopped past gates.g3.phase_timeout, its
    client judged by load.health, its simulator bound tightened to sim_lag_cap (None:
    the site's bound as it is)."""
    health = HealthBounds.from_dict(cfg.load.health.model_dump())
    if sim_lag_cap is not None:
        health = replace(health, max_sim_lag_share=min(health.max_sim_lag_share,
                                                       sim_lag_cap))
    return PhaseSpec(endpoints=tuple(endpoints), requests=tuple(specs), concurrency=tier,
                     api=cfg.workload.api, timeout=cfg.load.timeout,
                     phase_timeout=cfg.gates.g3.phase_timeout,
                     extra_body=fixed_output_body(ignore_eos) or None,
                     health=health)


def completed_prompt_tokens(records: Sequence[RequestRecord],
                            specs: Sequence[RequestSpec]) -> float:
    """Prompt tokens of a phase's completed requests: the server's usage where it gave
    one, else the calibrated count of the request's document."""
    calibrated = {s.doc_id: s.prompt_tokens or 0 for s in specs}
    return float(sum(r.prompt_tokens or calibrated.get(r.doc_id, 0)
                     for r in records if r.ok and not r.warmup))


def phase_params(specs: Sequence[RequestSpec], urls: list[str], cfg: SiteConfig,
                 workload: Workload, ignore_eos: bool = True,
                 engine: Mapping[str, str] | None = None) -> JSONDict:
    """A G3 phase's benchmark params; `engine` (engine, engine_version, as preflight
    found them) is where the report's versions table reads them."""
    return {**(engine or {}), "docs": len(specs), "doc_tokens": cfg.workload.doc_tokens,
            "endpoints": [u for u in urls], "api": cfg.workload.api,
            "max_tokens": cfg.workload.max_tokens,
            "fixed_output": {"max_tokens": cfg.workload.max_tokens,
                             **fixed_output_body(ignore_eos)},
            "calibrated": workload.calibrated,
            "prompt_tokens": [s.prompt_tokens for s in specs[:512]]}


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


def finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def json_dict(d: Mapping[str, object]) -> JSONDict:
    return {str(k): jsonable(v) for k, v in d.items()}


def jsonable(d: object) -> JSON:
    """What JSON can hold of a value: numpy numbers as Python's, non-finite as null."""
    if isinstance(d, dict):
        return {str(k): jsonable(v) for k, v in d.items()}
    if isinstance(d, list | tuple):
        return [jsonable(v) for v in d]
    if isinstance(d, float | np.floating):
        return float(d) if np.isfinite(d) else None
    if isinstance(d, np.integer):
        return int(d)
    if isinstance(d, np.ndarray):
        return jsonable(d.tolist())
    if d is None or isinstance(d, str | int | bool):
        return d
    return str(d)
