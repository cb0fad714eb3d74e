"""A G3 session: preflight per layout, then each cell's repetition pairs until the
decision settles or the budget ends. Every phase is stored as it is measured."""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.config.models import Layout, SiteConfig
from harness.errors import EndpointError, InfrastructureError, MeasurementError
from harness.g3.arms import ArmControl, endpoints, wait_healthy
from harness.g3.evidence import StorageSampler, scrape_all, summed_evidence
from harness.g3.plan import ARMS, Cell, doc_seed, docs_for, pair_order
from harness.g3.rules import all_restarted, check_evidence, compare_arms
from harness.store import runs as store_runs
from harness.store import writer


@dataclass(frozen=True)
class Preflight:
    layout: str
    cards: dict[str, list[dict[str, Any]]]  # arm -> model card per instance
    problems: list[str]
    accelerated_exposes_external: bool


@dataclass
class ArmRep:
    """One arm's measured phase of one repetition, as the decision needs it."""

    ttft: np.ndarray
    output_tokens: int
    wall_time: float
    evidence: dict[str, Any]
    benchmark_id: int


@dataclass
class G3Session:
    gate: Any  # harness.pytest_plugin.GateContext
    control: ArmControl
    drop_caches: Callable[[list[str]], None]
    storage_hosts: list[tuple[str, Any]]
    preflights: dict[str, Preflight] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    workloads: dict[int, Any] = field(default_factory=dict)  # repetition -> document set

    @property
    def config(self) -> SiteConfig:
        config: SiteConfig = self.gate.loaded.config
        return config

    # -- preflight ---------------------------------------------------------------------
    def preflight(self, layout: Layout) -> Preflight:
        """Start each arm, read what it serves, stop it; compare before anything is measured."""
        if layout.name in self.preflights:
            return self.preflights[layout.name]
        from harness.loadgen import probe
        from harness.probes.prometheus import scrape

        cards: dict[str, list[dict[str, Any]]] = {}
        exposes = False
        for arm in ARMS:
            self.control.start(arm, layout)
            try:
                eps = endpoints(self.config, self.gate.inventory, arm, layout)
                infos = [asyncio.run(probe(ep.url)) for ep in eps]
                cards[arm] = [_card(info) for info in infos]
                for ep, info, card in zip(eps, infos, cards[arm], strict=True):
                    store_runs.add_host_fact(
                        self.gate.store, self.gate.run_id, host=ep.host,
                        key=f"engine {arm} {layout.name}#{ep.instance}",
                        value={**card, "url": ep.url, "card": _jsonable(info.raw or {})},
                        simulated=card["simulated"])
                if any(c["simulated"] for c in cards[arm]):
                    self.gate.mark_simulated()
                if arm == "accelerated":
                    snaps = scrape_all([ep.url for ep in endpoints(
                        self.config, self.gate.inventory, arm, layout)], scrape)
                    exposes = all(_exposes_external(s) for s in snaps)
            finally:
                self.control.stop(arm, layout)
        result = Preflight(layout.name, cards, compare_arms(self.config, layout, cards), exposes)
        self.preflights[layout.name] = result
        return result

    # -- one arm, one repetition ---------------------------------------------------------
    def workload(self, cell: Cell, rep: int, tokenize_url: str) -> Any:
        """The pair's documents, calibrated to exact token counts with the engine's own
        tokenizer (it is running when this is called); both arms get the same ones.
        One set per repetition, sized for the largest tier, sliced per cell."""
        from dataclasses import replace

        from harness.loadgen import doc_qa

        wl, g3 = self.config.workload, self.config.gates.g3
        if rep not in self.workloads:
            self.workloads[rep] = doc_qa(
                docs_for(max(g3.tiers), wl.docs_per_concurrency, wl.min_docs), wl.doc_tokens,
                wl.question_tokens, doc_seed(wl.seed, rep), max_tokens=wl.max_tokens,
                tokenize_url=tokenize_url, model=self.config.model.name)
        full = self.workloads[rep]
        n = docs_for(cell.tier, wl.docs_per_concurrency, wl.min_docs)
        return replace(full, specs=full.specs[:n])

    def run_arm(self, cell: Cell, rep: int, arm: str, workload: Any) -> tuple[ArmRep, Any]:
        from harness.loadgen import cache_evidence, run_phase
        from harness.probes.prometheus import scrape

        cfg, layout, store, run_id = self.config, cell.layout, self.gate.store, self.gate.run_id
        eps = endpoints(cfg, self.gate.inventory, arm, layout)
        load_eps = _load_endpoints(eps, cfg.model.name)

        def start_phase(phase: str, specs: list[Any]) -> int:
            return writer.start_benchmark(store, run_id, arm=arm, layout=layout.name,
                                          tier=cell.tier, repetition=rep, phase=phase,
                                          params=_params(specs, eps, cfg, workload))

        self.control.start(arm, layout)
        try:
            if workload is None:
                workload = self.workload(cell, rep, eps[0].url)
            specs = list(workload.specs)
            warm = start_phase("warm", specs)
            w = run_phase(load_eps, specs, concurrency=cell.tier, api=cfg.workload.api,
                          timeout=cfg.load.timeout, progress=True,
                          on_batch=_store_batch(store, warm))
            writer.finish_benchmark(store, warm, status="FINISHED", duration=w.wall_time,
                                    summary=_summary(w))
            _some_succeeded(w.records, "warm", arm)
            urls = [ep.url for ep in eps]
            warmed = scrape_all(urls, scrape)
            self.control.restart(arm, layout)
            self.drop_caches(cfg.gates.g3.drop_caches_on)
            before = scrape_all(urls, scrape)
            bench = start_phase("measured", specs)
            ev = cfg.gates.g3.evidence
            with StorageSampler(self.storage_hosts, ev.diskstats, ev.devices,
                                ev.storage_sample_interval) as sampler:
                m = run_phase(load_eps, specs, concurrency=cell.tier, api=cfg.workload.api,
                              timeout=cfg.load.timeout, progress=True,
                              on_batch=_store_batch(store, bench))
            _still_healthy(eps, bench, store)
            _some_succeeded(m.records, "measured", arm)
            after = scrape_all(urls, scrape)
            evidence = summed_evidence(before, after, cache_evidence)
            evidence["cold_restart"] = all_restarted(warmed, before)
            evidence["storage"] = sampler.bandwidth()
            evidence["storage_errors"] = sampler.errors[:5]
            now = time.time()
            writer.insert_series(store, run_id, sampler.series(), benchmark_id=bench)
            writer.insert_series(store, run_id, [
                {"source": layout.name, "metric": f"evidence:{k}", "labels": {"arm": arm},
                 "at": now, "value": float(v)}
                for k, v in evidence.items() if isinstance(v, int | float)
            ], benchmark_id=bench)
            summary = {**_summary(m), "evidence": evidence}
            writer.finish_benchmark(store, bench, status="FINISHED", duration=m.wall_time,
                                    summary=summary)
            return ArmRep(ttft=_ttfts(m.records), output_tokens=_out_tokens(m.records),
                          wall_time=m.wall_time, evidence=evidence,
                          benchmark_id=bench), workload
        finally:
            self.control.stop(arm, layout)

    # -- a cell ------------------------------------------------------------------------
    def run_cell(self, cell: Cell) -> Any:
        from harness.stats import Criteria, RepSample, decide_cell, look_plan, planned_looks

        g3 = self.config.gates.g3
        looks = planned_looks(g3.repetitions.min, g3.repetitions.max)
        plan = look_plan(looks, g3.confidence)
        cell_seed = g3.seed + zlib.crc32(cell.key.encode())  # the same at every look
        done = completed_reps(self.gate.store, self.gate.run_id, cell)
        crit = Criteria(ttft_p50_drop=g3.thresholds.ttft_p50_drop,
                        throughput_gain=g3.thresholds.throughput_gain,
                        band_top=g3.thresholds.band_top,
                        max_failed_share=g3.evidence.max_failed_share)
        decision: Any = None
        evidence_problem = ""
        for rep in range(g3.repetitions.max):
            if rep not in done:
                workload, pair = None, {}
                for arm in pair_order(g3.seed, cell.key, rep):
                    pair[arm], workload = self.run_arm(cell, rep, arm, workload)
                done[rep] = pair
            evidence_problem = evidence_problem or check_evidence(done[rep], g3.evidence)
            if evidence_problem:
                break
            if rep + 1 in looks:
                reps = [done[r] for r in sorted(done)]
                decision = decide_cell(
                    [RepSample(p["baseline"].ttft, p["baseline"].output_tokens,
                               p["baseline"].wall_time) for p in reps],
                    [RepSample(p["accelerated"].ttft, p["accelerated"].output_tokens,
                               p["accelerated"].wall_time) for p in reps],
                    crit, confidence=g3.confidence, look=rep + 1, looks=looks,
                    n_boot=g3.bootstrap, seed=cell_seed, plan=plan)
                self.store_cell(cell, decision, reps)
                if decision.final or decision.verdict.value != "INCONCLUSIVE" \
                        or decision.needs_signoff:
                    break
                if time.monotonic() - self.started > g3.gate_budget:
                    evidence_problem = "time budget exhausted"
                    break
        return decision, evidence_problem

    def store_cell(self, cell: Cell, d: Any, reps: list[dict[str, ArmRep]],
                   override: str = "") -> None:
        writer.upsert_cell(self.gate.store, self.gate.run_id, {
            "layout": cell.layout.name, "tier": cell.tier,
            "verdict": "INCONCLUSIVE" if override else d.verdict.value,
            "reason": override or d.reason, "repetitions": d.repetitions,
            "n_baseline": d.n_baseline, "n_accelerated": d.n_accelerated,
            "ttft_p50_baseline": _finite(d.ttft_p50_baseline),
            "ttft_p50_accelerated": _finite(d.ttft_p50_accelerated),
            "drop": _finite(d.drop.value), "drop_lo": _finite(d.drop.lo),
            "drop_hi": _finite(d.drop.hi), "thr_baseline": d.thr_baseline,
            "thr_accelerated": d.thr_accelerated, "gain": _finite(d.gain.value),
            "gain_lo": _finite(d.gain.lo), "gain_hi": _finite(d.gain.hi),
            "confidence": self.config.gates.g3.confidence, "rule": d.rule,
            "details": {**_jsonable(d.details), "needs_signoff": d.needs_signoff,
                        "level": d.level, "drop_verdict": d.drop.verdict.value,
                        "gain_verdict": d.gain.verdict.value,
                        "evidence": [{arm: p[arm].evidence for arm in ARMS} for p in reps]},
        })


def completed_reps(store: Any, run_id: int, cell: Cell) -> dict[int, dict[str, ArmRep]]:
    """For `gate resume`: the pairs whose both measured phases finished in this run."""
    found: dict[int, dict[str, ArmRep]] = {}
    for b in writer.benchmarks(store, run_id):
        if (b.layout, b.tier, b.phase) != (cell.layout.name, cell.tier, "measured"):
            continue
        if b.status != "FINISHED":
            continue
        rows = writer.requests(store, b.id)
        ttft = np.array([r["ttft"] if r["error_kind"] is None and r["ttft"] is not None
                         else np.inf for r in rows if not r["warmup"]], dtype=float)
        out = sum(int(r["output_tokens"] or 0) for r in rows
                  if r["error_kind"] is None and not r["warmup"])
        found.setdefault(b.repetition, {})[b.arm] = ArmRep(
            ttft, out, float(b.duration or 0.0), dict(b.summary.get("evidence", {})), b.id)
    return {rep: pair for rep, pair in found.items() if set(pair) == set(ARMS)}


def _card(info: Any) -> dict[str, Any]:
    raw = info.raw or {}
    sim = raw.get("gate_sim") or {}
    parallel = raw.get("parallel_config") or {}
    tp = sim.get("tp", parallel.get("tensor_parallel_size"))
    return {"models": list(info.models), "model": info.models[0] if info.models else None,
            "max_model_len": info.max_model_len, "version": info.version,
            "tp": int(tp) if tp is not None else None, "simulated": bool(sim.get("simulated"))}


def _exposes_external(snapshot: Any) -> bool:
    names = getattr(snapshot, "names", None)
    fams = names() if callable(names) else []
    return any(n.startswith(("vllm:external_prefix_cache", "lmcache:")) for n in fams)


def _load_endpoints(eps: list[Any], model: str) -> list[Any]:
    from harness.loadgen import Endpoint

    return [Endpoint(url=ep.url, model=model, instance=ep.instance) for ep in eps]


def _store_batch(store: Any, bench: int) -> Callable[[list[Any]], None]:
    def store_rows(records: list[Any]) -> None:
        writer.insert_requests(store, bench, [r.to_row() for r in records])

    return store_rows


def _still_healthy(eps: list[Any], bench: int, store: Any) -> None:
    """An engine that died during the phase is an infrastructure failure, not a slow arm."""
    for ep in eps:
        try:
            wait_healthy(ep.url, timeout=10)
        except EndpointError as exc:
            writer.finish_benchmark(store, bench, status="FAILED", duration=0.0,
                                    summary={"error": exc.one_line()})
            raise InfrastructureError(f"engine died during the measured phase: {exc.message}",
                                      host=ep.url, stage="measured") from None


def _params(specs: list[Any], eps: list[Any], cfg: SiteConfig, workload: Any) -> dict[str, Any]:
    return {"docs": len(specs), "doc_tokens": cfg.workload.doc_tokens,
            "endpoints": [ep.url for ep in eps], "api": cfg.workload.api,
            "max_tokens": cfg.workload.max_tokens,
            "calibrated": bool(getattr(workload, "calibrated", False)),
            "prompt_tokens": [s.prompt_tokens for s in specs][:512]}


def _some_succeeded(records: list[Any], phase: str, arm: str) -> None:
    """A phase where every request failed measured nothing: that is an ERROR to fix
    (wrong model, context too long, engine broken), not an infinitely slow arm."""
    if records and not any(r.ok for r in records):
        kinds: dict[str, int] = {}
        for r in records:
            kinds[str(r.error)[:200]] = kinds.get(str(r.error)[:200], 0) + 1
        top = max(kinds, key=lambda k: kinds[k])
        raise MeasurementError(f"every request of the {arm} {phase} phase failed "
                               f"({len(records)}x), e.g. {top}", stage=phase)


def _summary(result: Any) -> dict[str, Any]:
    s = result.summary
    out: dict[str, Any] = _jsonable(s.to_dict() if hasattr(s, "to_dict") else dict(vars(s)))
    return out


def _ttfts(records: list[Any]) -> np.ndarray:
    vals = [r.ttft if r.ok and r.ttft is not None else np.inf
            for r in records if not r.warmup]
    if not vals:
        raise MeasurementError("measured phase produced no requests", stage="measured")
    return np.asarray(vals, dtype=float)


def _out_tokens(records: list[Any]) -> int:
    return sum(int(r.output_tokens or 0) for r in records if r.ok and not r.warmup)


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _jsonable(d: Any) -> Any:
    if isinstance(d, dict):
        return {str(k): _jsonable(v) for k, v in d.items()}
    if isinstance(d, list | tuple):
        return [_jsonable(v) for v in d]
    if isinstance(d, float | np.floating):
        return float(d) if np.isfinite(d) else None
    if isinstance(d, np.integer):
        return int(d)
    if isinstance(d, np.ndarray):
        return _jsonable(d.tolist())
    return d
