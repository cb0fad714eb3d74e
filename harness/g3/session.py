"""A G3 session: preflight per layout, then each cell's repetition pairs until the
decision settles or the budget ends. Every phase is stored as it is measured.

What runs is checked, not assumed: after every start and cold restart the engines of
both arms are read (harness/serving/engines.py) and the arms of a pair must differ only as
the config allows, or the cell is ERROR. Every request asks a fixed output length and
the throughput counts that length, never the server's own token count.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.config.decision import criteria_for
from harness.config.models import Layout, SiteConfig
from harness.errors import MeasurementError
from harness.g3.evidence import crosschecks, scrape_all, summed_evidence
from harness.g3.plan import pair_order
from harness.g3.preflight import Preflight, exposes_external, model_card
from harness.g3.records import ArmRep, completed_reps, pair_identity, store_cell, ttfts
from harness.g3.rules import (
    Card,
    Said,
    all_restarted,
    cell_notes,
    check_evidence,
    compare_cards,
    processes_replaced,
)
from harness.loadgen import storage
from harness.loadgen.engine import OnBatch
from harness.loadgen.failures import explain
from harness.loadgen.phase import Executor, InProcessExecutor
from harness.loadgen.phase_progress import Where, counted
from harness.loadgen.storage import PhaseKey, PhaseWriter
from harness.loadgen.workloads import Workload
from harness.serving.arms import ArmControl, endpoints, health_path
from harness.serving.cells import ARMS, Cell, doc_seed, docs_for
from harness.serving.disks import DiskSource, StorageSampler
from harness.serving.engines import EngineWatch, Observation
from harness.serving.gate_run import REMEASURES, GateRun
from harness.serving.phase_checks import (
    ended_in_time,
    load_endpoints,
    measured_something,
    still_healthy,
)
from harness.serving.phases import (
    WARM_MAX_TOKENS,
    completed_prompt_tokens,
    jsonable,
    phase_params,
    phase_spec,
    phase_tokens,
    warm_phase,
)
from harness.serving.problems import Problem, ProblemKind
from harness.stats.model import CellDecision
from harness.store import runs as store_runs
from harness.store import writer


@dataclass
class G3Session:
    gate: GateRun
    control: ArmControl
    watch: EngineWatch
    drop_caches: Callable[[list[str]], None]
    storage: list[DiskSource]  # the storage hosts' devices (evidence.devices)
    # Each layout host's KV volume (evidence.kv_volume, resolved before anything was
    # measured; empty without one)
    kv_volumes: dict[str, DiskSource] = field(default_factory=dict)
    preflights: dict[str, Preflight] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    workloads: dict[int, Workload] = field(default_factory=dict)  # repetition -> documents
    phases_started: int = 0  # for progress: how far the gate is
    phases_added: int = 0  # pairs past the minimum (a cell undecided) or measured again: 4 each
    pairs_added: set[tuple[str, int, int]] = field(default_factory=set)
    # Where load phases run: here, or the agent on the client host (remote.placement).
    executor: Executor = field(default_factory=InProcessExecutor)
    # The pairs each cell's decision rested on (cell key -> repetition -> arms), for
    # what the cell says beside its numbers (cell_notes).
    decided_on: dict[str, dict[int, dict[str, ArmRep]]] = field(default_factory=dict)

    @property
    def config(self) -> SiteConfig:
        return self.gate.loaded.config

    def start(self, arm: str, layout: Layout, *, preflight: bool = False) -> Observation:
        """Start the arm. The preflight reads its engines in full (and keeps the reading
        as a fact); before a pair's warm-up only their processes are recorded: the cold
        restart before the measured phase is what gets read and compared."""
        self._all_or_nothing(self.control.start, arm, layout)
        if preflight:
            return self.watch.observe(arm, layout, as_fact=True)
        return self.watch.track(arm, layout)

    def restart(self, arm: str, layout: Layout) -> Observation:
        self._all_or_nothing(self.control.restart, arm, layout)
        return self.watch.observe(arm, layout)

    def _all_or_nothing(self, action: Callable[[str, Layout], float], arm: str,
                        layout: Layout) -> None:
        """A start that failed on one instance (its port taken, ...) leaves the others up:
        stop the arm before the error goes on, or the retry finds "an engine is already
        running here" instead of the first error."""
        try:
            action(arm, layout)
        except BaseException:
            with contextlib.suppress(Exception):  # the first error is the one to report
                self.stop(arm, layout)
            raise

    def stop(self, arm: str, layout: Layout) -> None:
        self.control.stop(arm, layout)
        self.watch.stopped(arm, layout)

    # -- preflight ---------------------------------------------------------------------
    def preflight(self, layout: Layout) -> Preflight:
        """Start each arm, read what it serves and runs, stop it; compare before anything
        is measured."""
        if layout.name in self.preflights:
            return self.preflights[layout.name]
        from harness.loadgen import probe
        from harness.probes.prometheus import scrape

        cards: dict[str, list[Card]] = {}
        seen: dict[str, Observation] = {}
        exposes = False
        for arm in ARMS:
            seen[arm] = self.start(arm, layout, preflight=True)
            try:
                eps = endpoints(self.config, self.gate.inventory, arm, layout)
                infos = [asyncio.run(probe(ep.url, engine=self.config.engine)) for ep in eps]
                cards[arm] = [model_card(info) for info in infos]
                for ep, info, card in zip(eps, infos, cards[arm], strict=True):
                    store_runs.add_host_fact(
                        self.gate.store, self.gate.run_id, host=ep.host,
                        key=f"engine {arm} {layout.name}#{ep.instance}",
                        value={**card, "url": ep.url, "card": jsonable(info.raw or {})},
                        simulated=bool(card["simulated"]))
                if any(c["simulated"] for c in cards[arm]):
                    self.gate.mark_simulated()
                if arm == "accelerated":
                    # the engines' own counters: a KV store's (Mooncake master) are
                    # storage-side evidence (harness/g3/evidence.py summed_evidence)
                    snaps = scrape_all([ep.url for ep in eps], scrape)
                    exposes = all(exposes_external(s) for s in snaps)
            finally:
                self.stop(arm, layout)
        result = Preflight(layout.name, cards, compare_cards(self.config, layout, cards),
                           self.watch.compare(seen["baseline"], seen["accelerated"]),
                           seen["baseline"].problems + seen["accelerated"].problems, exposes)
        self.preflights[layout.name] = result
        return result

    # -- one arm, one repetition ---------------------------------------------------------
    def workload(self, cell: Cell, rep: int, tokenize_url: str) -> Workload:
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

    def run_arm(self, cell: Cell, rep: int, arm: str,
                workload: Workload | None) -> tuple[ArmRep, Workload]:
        from harness.loadgen import cache_evidence
        from harness.loadgen.sampler import MetricsSampler
        from harness.probes.prometheus import scrape

        cfg, layout, store, run_id = self.config, cell.layout, self.gate.store, self.gate.run_id
        eps = endpoints(cfg, self.gate.inventory, arm, layout)
        urls = [ep.url for ep in eps]

        started = self.start(arm, layout)
        try:
            docs = workload or self.workload(cell, rep, eps[0].url)
            specs = list(docs.specs)
            pre = self.preflights.get(layout.name)  # what preflight read of the engines
            ignore_eos = pre.honours_ignore_eos(arm) if pre else True
            engine = pre.engine_names(arm) if pre else {}

            def begin(phase: str) -> PhaseWriter:
                asked = WARM_MAX_TOKENS if phase == "warm" else None
                return storage.PhaseWriter(store, run_id,
                                     PhaseKey(arm, layout.name, cell.tier, rep, phase),
                                     params=phase_params(specs, urls, cfg, docs, ignore_eos,
                                                         engine, max_tokens=asked))

            spec = phase_spec(cfg, cell.tier, load_endpoints(eps, cfg.model.name), specs,
                              ignore_eos)

            def shown(phase: str, sink: OnBatch) -> OnBatch:
                self.phases_started += 1
                added = rep >= self.config.gates.g3.repetitions.min  # the looks undecided
                if added and (cell.layout.name, cell.tier, rep) not in self.pairs_added:
                    self.pairs_added.add((cell.layout.name, cell.tier, rep))
                    self.phases_added += 4  # 2 arms x (warm, measured)
                return counted(Where(gate="G3", layout=layout.name, tier=cell.tier, arm=arm,
                                     repetition=rep, phase=phase, total=len(specs),
                                     phase_no=self.phases_started,
                                     phases_planned=self._phases_planned() + self.phases_added,
                                     added=added, unit="pair"), sink)

            warm = begin("warm")
            w = self.executor.run(warm_phase(spec), shown("warm", warm.sink),
                                  label=warm.label)
            warm.finish(w)
            ended_in_time(w, f"{arm} warm", "warm")
            measured_something(w.records, f"{arm} warm", "warm", cfg)
            warmed = scrape_all(urls, scrape)
            seen = self.restart(arm, layout)
            self.drop_caches(cfg.gates.g3.drop_caches_on)
            before = scrape_all(urls, scrape)
            stores = scrape_all(cfg.gates.g3.evidence.store_metrics, scrape)
            bench = begin("measured")
            ev = cfg.gates.g3.evidence
            kv = [self.kv_volumes[h] for h in sorted({i.host for i in layout.instances})
                  if h in self.kv_volumes]
            with StorageSampler(self.storage, ev.storage_sample_interval) as sampler, \
                    StorageSampler(kv, ev.storage_sample_interval) as kv_sampler, \
                    MetricsSampler(urls, ev.metrics_interval) as metrics:
                m = self.executor.run(spec, shown("measured", bench.sink), label=bench.label)
            if m.health.sim_lag_mean_ms is not None:
                # Only the simulator reports its schedule (gate_sim_schedule_*). An engine
                # that claims to makes the run SIMULATED: a server-side "stall" it reports
                # has its pair measured again, so a real site's engine (or a proxy) could
                # otherwise choose which of its pairs count.
                self.gate.mark_simulated()
            series = (sampler.series() + kv_sampler.series("kv_volume_read_bytes")
                      + metrics.series_rows())
            if m.status == "TIMEOUT":
                bench.finish(m, series=series)
            ended_in_time(m, f"{arm} measured", "measured")
            still_healthy(eps, bench, m, health_path(cfg))
            measured_something(m.records, f"{arm} measured", "measured", cfg)
            after = scrape_all(urls, scrape)
            evidence = summed_evidence(
                before + stores, after + scrape_all(cfg.gates.g3.evidence.store_metrics,
                                                    scrape), cache_evidence, engines=len(urls))
            cold = all_restarted(warmed, before)
            evidence["cold_restart"] = cold if cold is not None else processes_replaced(
                started.processes, seen.processes)
            evidence["storage"] = {**sampler.bandwidth()}
            if kv:  # the GPU hosts' side of the same reads (harness/g3/devices.py)
                evidence["kv_volume"] = {**kv_sampler.bandwidth()}
            evidence["storage_errors"] = [e for e in (sampler.errors + kv_sampler.errors)[:5]]
            evidence["ignore_eos_sent"] = ignore_eos
            # the phase's KV bytes, for storage-side evidence's magnitude (rules.py)
            evidence["client_prompt_tokens"] = completed_prompt_tokens(m.records, specs)
            evidence["kv_bytes_per_token"] = float(cfg.model.kv_bytes_per_token)
            evidence["kv_compression"] = float(ev.kv_compression)
            evidence.update(crosschecks(before, after, m.records, m.health.loop_lag_p99_ms,
                                        evidence))
            failed = explain(m.records, api=cfg.workload.api, model=cfg.model.name,
                             at_share=1e-9)
            if failed is not None and failed.samples:
                # the server's words, for the "requests failed" reason and the summary
                evidence["first_failure"] = failed.samples[0].line()
            now = time.time()
            series += [{"source": layout.name, "metric": f"evidence:{k}",
                        "labels": {"arm": arm}, "at": now, "value": float(v)}
                       for k, v in evidence.items() if isinstance(v, int | float)]
            lengths = phase_tokens(m.records, cfg.workload.max_tokens)
            bench.finish(m, series=series, extra={
                "evidence": evidence,
                "fixed_output": {"requests_at_length": lengths.at_length,
                                 "completed": lengths.completed,
                                 "usage_disagrees": lengths.disagree},
                "identity": {"facts": seen.facts, "problems": seen.problems}})
            return ArmRep(ttft=ttfts(m.records), lengths=lengths, wall_time=m.result.wall_time,
                          evidence=evidence, benchmark_id=bench.benchmark_id, facts=seen.facts,
                          fact_problems=seen.problems, saturation=m.health.reason), docs
        finally:
            self.stop(arm, layout)

    def _phases_planned(self) -> int:
        """Load phases at the minimum repetitions: cells x pairs x 2 arms x (warm,
        measured); the ETA's denominator (more pairs only when the looks cannot decide)."""
        from harness.serving.cells import cells

        return len(cells(self.config)) * self.config.gates.g3.repetitions.min * 4

    # -- a cell ------------------------------------------------------------------------
    def _measure_pair(self, cell: Cell, rep: int) -> dict[str, ArmRep]:
        """Both arms of one repetition, in the pair's ABBA order. A pair whose load client
        or simulated engine was disturbed (a stall of either arm's phase: phase health) is
        measured again, up to REMEASURES times, its phases kept on record as SUPERSEDED:
        the decision never sees a disturbed phase, and both arms are treated alike (a
        stall on the baseline would inflate the gain, on the accelerated arm hide it).
        A pair still disturbed after that is returned as it is and makes the cell
        INCONCLUSIVE "client saturated" (rules.check_evidence)."""
        order = pair_order(self.config.gates.g3.seed, cell.key, rep)
        for attempt in range(REMEASURES + 1):
            workload: Workload | None = None
            pair: dict[str, ArmRep] = {}
            for arm in order:
                pair[arm], workload = self.run_arm(cell, rep, arm, workload)
            disturbed = [f"{arm}: {pair[arm].saturation}" for arm in order
                         if pair[arm].saturation]
            if not disturbed or attempt == REMEASURES:
                return pair
            writer.supersede_pair(self.gate.store, self.gate.run_id, cell.layout.name,
                                  cell.tier, rep)
            self.phases_added += 4  # measured again: the ETA counts its phases too
            store_runs.add_event(self.gate.store, self.gate.run_id, source="harness",
                                 name=f"{cell.key} repetition {rep + 1} measured again",
                                 host=None, status="changed",
                                 message="disturbed: " + "; ".join(disturbed))
        raise AssertionError("unreachable")  # pragma: no cover

    def run_cell(self, cell: Cell) -> tuple[CellDecision | None, Problem | None]:
        """(decision, problem): the decision at the last look reached (None before the
        first), and why the cell cannot be decided (INCONCLUSIVE) or None. Arms that
        differ in more than the accelerator raise: the cell is ERROR."""
        from harness.stats import Criteria, RepSample, decide_cell, look_plan, planned_looks

        g3 = self.config.gates.g3
        looks = planned_looks(g3.repetitions.min, g3.repetitions.max)
        plan = look_plan(looks, g3.confidence)
        cell_seed = g3.seed + zlib.crc32(cell.key.encode())  # the same at every look
        done = completed_reps(self.gate.store, self.gate.run_id, cell,
                              self.config.workload.max_tokens)
        applied = tuple({"ttft_p50_drop": "drop", "throughput_gain": "gain"}[c]
                        for c in criteria_for(g3.criteria, cell.layout.name))
        crit = Criteria(ttft_p50_drop=g3.thresholds.ttft_p50_drop,
                        throughput_gain=g3.thresholds.throughput_gain,
                        band_top=g3.thresholds.band_top,
                        max_failed_share=g3.evidence.max_failed_share, applied=applied)
        decision: CellDecision | None = None
        problem: Problem | None = None
        self.decided_on[cell.key] = done
        for rep in range(g3.repetitions.max):
            if rep not in done:
                done[rep] = self._measure_pair(cell, rep)
            assert self.config.arms is not None
            differ = pair_identity(done[rep], self.config.arms.accelerated.differs_by)
            if differ is not None:
                if decision is not None:
                    store_cell(self.gate.store, self.gate.run_id, self.config, cell,
                               decision, [], override=differ.text, override_verdict="ERROR")
                raise MeasurementError(f"repetition {rep + 1}: {differ}", stage="identity")
            problem = check_evidence(done[rep], g3.evidence, g3.thresholds)
            if problem is not None:
                break
            if rep + 1 in looks:
                reps = [done[r] for r in range(rep + 1)]  # the pairs of this look, no more
                decision = decide_cell(
                    [RepSample(p["baseline"].ttft, p["baseline"].output_tokens,
                               p["baseline"].wall_time) for p in reps],
                    [RepSample(p["accelerated"].ttft, p["accelerated"].output_tokens,
                               p["accelerated"].wall_time) for p in reps],
                    crit, confidence=g3.confidence, look=rep + 1, looks=looks,
                    n_boot=g3.bootstrap, seed=cell_seed, plan=plan)
                store_cell(self.gate.store, self.gate.run_id, self.config, cell, decision,
                           reps)
                if decision.final or decision.verdict.value != "INCONCLUSIVE" \
                        or decision.needs_signoff:
                    break
                if time.monotonic() - self.started > g3.gate_budget:
                    problem = Problem(ProblemKind.BUDGET, str(ProblemKind.BUDGET))
                    break
        return decision, problem

    def cell_notes(self, cell: Cell) -> tuple[Said | None, Said | None]:
        """What the cell says beside its numbers, and why its PASS needs a sign-off, over
        the pairs its decision rested on (rules.cell_notes)."""
        return cell_notes(list(self.decided_on.get(cell.key, {}).values()),
                          client_placement=self.config.load.placement == "client")

    def store_cell(self, cell: Cell, d: CellDecision, reps: list[dict[str, ArmRep]],
                   override: str | Problem = "") -> None:
        store_cell(self.gate.store, self.gate.run_id, self.config, cell, d, reps, override)
