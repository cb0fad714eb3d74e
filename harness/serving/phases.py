"""What a serving phase asks and records, the same for every gate that drives engines:
the fixed output length each request asks (and how the harness counts it), a phase's
spec and its stored parameters, and the JSON-safe values a phase's rows hold."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.config.models import SiteConfig
from harness.loadgen.health import HealthBounds
from harness.loadgen.phase import PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.loadgen.workloads import Workload
from harness.serving.problems import JSON, JSONDict

# Every G3 request asks a fixed output length and tells the engine to ignore EOS where
# its profile says it honours `ignore_eos` (vLLM, SGLang, llama.cpp, the simulator:
# harness.loadgen.engines); the run records what was sent with the phase.
FIXED_OUTPUT_BODY = {"ignore_eos": True}


@dataclass(frozen=True)
class PhaseTokens:
    """A measured phase's output, counted by the harness: throughput believes the length
    it asked for, never the server's count (a proxy could inflate that)."""

    fixed: int       # the output length every request asked for
    completed: int   # requests that completed (failed ones are +inf TTFT, 0 tokens)
    at_length: int   # completed with finish_reason "length"
    disagree: int    # completed whose usage.completion_tokens is not `fixed` (or absent)

    @property
    def tokens(self) -> int:
        return self.fixed * self.at_length


def phase_tokens(records: Iterable[RequestRecord], fixed: int) -> PhaseTokens:
    """Count a phase's requests; warm-up requests are not counted."""
    completed = at_length = disagree = 0
    for r in records:
        if r.warmup or not r.ok:
            continue
        completed += 1
        if r.finish_reason == "length":
            at_length += 1
        if not r.usage_reported or r.output_tokens != fixed:
            disagree += 1
    return PhaseTokens(fixed, completed, at_length, disagree)


def fixed_output_body(ignore_eos: bool) -> dict[str, bool]:
    """What a serving phase adds to each request to fix its output length: `ignore_eos` only for an
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
    """A serving phase (warm or measured, the same documents): closed loop at the tier, every
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


# A G3 warm phase only has to leave each document's KV where the arm keeps it (the GPU
# prefix cache, the accelerated tier): its prefill does that, and one output token ends
# the request right after it, as vLLM's disaggregated-prefill proxy asks its prefiller
# (benchmarks/disagg_benchmarks/disagg_prefill_proxy_server.py: max_tokens=1). Decoding
# the fixed output length as well measured nothing and was two thirds of the demo's warm
# phase (docs/g3.md, step 3).
WARM_MAX_TOKENS = 1


def warm_phase(spec: PhaseSpec) -> PhaseSpec:
    """The warm phase of a pair: the measured phase's documents, each asking one token."""
    return replace(spec, requests=tuple(replace(r, max_tokens=WARM_MAX_TOKENS)
                                        for r in spec.requests))


def completed_prompt_tokens(records: Sequence[RequestRecord],
                            specs: Sequence[RequestSpec]) -> float:
    """Prompt tokens of a phase's completed requests: the server's usage where it gave
    one, else the calibrated count of the request's document."""
    calibrated = {s.doc_id: s.prompt_tokens or 0 for s in specs}
    return float(sum(r.prompt_tokens or calibrated.get(r.doc_id, 0)
                     for r in records if r.ok and not r.warmup))


def phase_params(specs: Sequence[RequestSpec], urls: list[str], cfg: SiteConfig,
                 workload: Workload, ignore_eos: bool = True,
                 engine: Mapping[str, str] | None = None,
                 max_tokens: int | None = None) -> JSONDict:
    """A serving phase's benchmark params; `engine` (engine, engine_version, as preflight
    found them) is where the report's versions table reads them; `max_tokens` what each
    request asked when it is not workload.max_tokens (a G3 warm phase's one token)."""
    asked = cfg.workload.max_tokens if max_tokens is None else max_tokens
    return {**(engine or {}), "docs": len(specs), "doc_tokens": cfg.workload.doc_tokens,
            "endpoints": [u for u in urls], "api": cfg.workload.api,
            "max_tokens": asked,
            "fixed_output": {"max_tokens": asked, **fixed_output_body(ignore_eos)},
            "calibrated": workload.calibrated,
            "prompt_tokens": [s.prompt_tokens for s in specs[:512]]}


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
