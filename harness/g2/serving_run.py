"""G2's serving baseline, the driving part: the baseline arm of one layout started as G3
starts it (its start action, /health, its engines read and recorded so the run's end or
`gate runs abort` stops them), a warm phase, then `repetitions` measured phases with
fresh documents, each through the phase seam (the same Executor G3 uses) and stored as a
benchmark row of the G2 run; the arm is stopped whatever happens.

A repetition whose own client or simulated engine was disturbed (phase health) is measured
again on spare documents, as G3 measures a disturbed pair again (harness/g3/session.py):
up to SPARES times a cell, the disturbed phase kept on record as SUPERSEDED. Spare
documents, never the same ones: the engine still holds their prefix, and a repetition
served from it would flatter the baseline.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.config.models import G2Serving, Layout, SiteConfig
from harness.errors import GateError, MeasurementError
from harness.g2.engine_version import RunningEngine
from harness.g2.serving import RepFigures, rep_figures
from harness.loadgen.phase import Executor, InProcessExecutor
from harness.loadgen.phase_progress import Where, counted
from harness.loadgen.storage import PhaseKey, PhaseWriter
from harness.loadgen.workloads import Workload
from harness.serving.arms import ArmControl, endpoints
from harness.serving.cells import Cell, doc_seed, docs_for
from harness.serving.engines import EngineWatch
from harness.serving.gate_run import GateRun
from harness.serving.phase_checks import ended_in_time, load_endpoints, measured_something
from harness.serving.phases import phase_params, phase_spec
from harness.store import Store
from harness.store import runs as store_runs
from harness.store.writer import supersede_pair

# Spare document sets a cell may measure a disturbed repetition on: twice G3's REMEASURES
# a pair. A serving phase is one short wave of fresh documents, and a simulated engine
# tokenizing a whole new set at once stalled 60-150 ms of a 0.24 s demo phase in up to
# every phase of a run (CI, 2026-12-04); spares cost nothing until one is needed.
SPARES = 4

ARM = "baseline"
# G2's documents are drawn apart from G3's (doc_seed(seed, repetition) there): the same
# text must not reach G3's engines as a prefix G2 already computed.
SEED_OFFSET = 1_000_000


@dataclass
class ServingBaseline:
    gate: GateRun
    control: ArmControl
    watch: EngineWatch
    executor: Executor = field(default_factory=InProcessExecutor)
    phases_started: int = 0
    # layout -> its running engines as they answered once started (test_engine_version)
    engines: dict[str, list[RunningEngine]] = field(default_factory=dict)
    engine_errors: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> SiteConfig:
        return self.gate.loaded.config

    @property
    def limits(self) -> G2Serving:
        serving = self.config.gates.g2.serving
        assert serving is not None  # only collected when configured (harness/g2/plan.py)
        return serving

    def measure(self, cell: Cell) -> list[RepFigures]:
        """The cell's repetitions, warm phase first; raises MeasurementError for a phase
        that measured nothing (every request failed, or stopped at phase_timeout)."""
        layout = cell.layout
        try:
            try:
                self.control.start(ARM, layout)
            except Exception as exc:  # test_engine_version says so too, without a restart
                self.engine_errors.setdefault(layout.name, f"the arm did not start ({exc})")
                raise
            self.watch.observe(ARM, layout)  # recorded: stopped at the run's end if left
            self._identify(layout)
            reps = self.limits.repetitions
            sets = self._documents(cell)
            spares = iter(sets[1 + reps:])
            self._phase(cell, -1, "warm", sets[0])
            figures = []
            for rep, docs in enumerate(sets[1:1 + reps]):
                measured = self._phase(cell, rep, "serving", docs)
                while measured.saturation and (spare := next(spares, None)) is not None:
                    self._supersede(cell, rep, measured.saturation)
                    measured = self._phase(cell, rep, "serving", spare)
                figures.append(measured)
            return figures
        finally:
            with contextlib.suppress(Exception):  # the measuring error is the one to report
                self.control.stop(ARM, layout)
            self.watch.stopped(ARM, layout)

    def running_engines(self, layout: Layout) -> list[RunningEngine]:
        """The arm's engines of `layout` as they answered when started for the serving
        baseline; started (and stopped) here when no serving cell of the layout ran."""
        if layout.name not in self.engines and layout.name not in self.engine_errors:
            try:
                self.control.start(ARM, layout)
                self.watch.observe(ARM, layout)
                self._identify(layout)
            finally:
                with contextlib.suppress(Exception):
                    self.control.stop(ARM, layout)
                self.watch.stopped(ARM, layout)
        if layout.name in self.engines:  # read at some start, even if another failed
            return self.engines[layout.name]
        raise MeasurementError(f"the baseline engines of {layout.name} did not say what "
                               f"they are: {self.engine_errors[layout.name]}",
                               stage="g2 engine version")

    def _identify(self, layout: Layout) -> None:
        """What each instance reports (/v1/models, /version, /info ...), read once; an
        endpoint that does not answer is kept as the error, not raised into the cell."""
        from harness.loadgen.probe import probe_all

        if layout.name in self.engines:
            return
        eps = endpoints(self.config, self.gate.inventory, ARM, layout)
        try:
            infos = probe_all([ep.url for ep in eps], engine=self.config.engine)
        except GateError as exc:
            self.engine_errors[layout.name] = exc.one_line()
            return
        self.engines[layout.name] = [
            RunningEngine(ep.url, ep.host, info.engine.name if info.engine else "generic",
                          info.version) for ep, info in zip(eps, infos, strict=True)]

    def _supersede(self, cell: Cell, rep: int, why: str) -> None:
        supersede_pair(self.gate.store, self.gate.run_id, cell.layout.name, cell.tier, rep,
                       phase="serving")
        store_runs.add_event(self.gate.store, self.gate.run_id, source="harness",
                             name=f"G2 {cell.key} repetition {rep + 1} measured again",
                             host=None, status="changed", message=f"disturbed: {why}")

    def _documents(self, cell: Cell) -> list[Workload]:
        """Fresh documents for the warm phase, each repetition and SPARES spares,
        calibrated with the engine's tokenizer in one go (it is running) and split."""
        from harness.loadgen import doc_qa

        wl = self.config.workload
        n = self.limits.docs or docs_for(cell.tier, wl.docs_per_concurrency, wl.min_docs)
        url = endpoints(self.config, self.gate.inventory, ARM, cell.layout)[0].url
        sets = self.limits.repetitions + 1 + SPARES
        every = doc_qa(n * sets, wl.doc_tokens, wl.question_tokens,
                       doc_seed(wl.seed, SEED_OFFSET), max_tokens=wl.max_tokens,
                       tokenize_url=url, model=self.config.model.name)
        return [replace(every, specs=every.specs[i * n:(i + 1) * n]) for i in range(sets)]

    def _ignore_eos(self) -> bool:
        from harness.loadgen.engines import PROFILES

        name = self.config.engine
        return PROFILES[name].ignore_eos if name in PROFILES else True

    def _phase(self, cell: Cell, rep: int, phase: str, docs: Workload) -> RepFigures:
        cfg = self.config
        eps = endpoints(cfg, self.gate.inventory, ARM, cell.layout)
        urls = [ep.url for ep in eps]
        specs = list(docs.specs)
        ignore_eos = self._ignore_eos()
        # the site's simulator bound, not G3's tighter one (phases.G3_MAX_SIM_LAG_SHARE)
        spec = phase_spec(cfg, cell.tier, load_endpoints(eps, cfg.model.name), specs,
                          ignore_eos, sim_lag_cap=None)
        writer = PhaseWriter(self.gate.store, self.gate.run_id,
                             PhaseKey(ARM, cell.layout.name, cell.tier, max(rep, 0), phase),
                             params=phase_params(specs, urls, cfg, docs, ignore_eos))
        self.phases_started += 1
        where = Where(gate="G2", layout=cell.layout.name, tier=cell.tier, arm=ARM,
                      repetition=max(rep, 0), phase=phase, total=len(specs),
                      phase_no=self.phases_started, phases_planned=self._phases_planned())
        outcome = self.executor.run(spec, counted(where, writer.sink), label=writer.label)
        writer.finish(outcome)
        if outcome.health.sim_lag_mean_ms is not None:
            self.gate.mark_simulated()  # only the simulator reports its schedule
        ended_in_time(outcome, f"baseline {phase}", f"g2 serving {phase}")
        measured_something(outcome.records, f"baseline {phase}", f"g2 serving {phase}", cfg)
        return rep_figures(outcome.records, outcome.result.wall_time, cfg.workload.max_tokens,
                           {s.doc_id: s.prompt_tokens for s in specs},
                           saturation=outcome.health.reason)

    def _phases_planned(self) -> int:
        from harness.g2.plan import serving_cells

        return len(serving_cells(self.config)) * (self.limits.repetitions + 1)


def release(loaded: LoadedConfig, inventory: Inventory, store: Store, run_id: int, *,
            sudo_password: str | None) -> list[str]:
    """`gate runs abort` of a killed G2 run: the serving baseline's engines are stopped as
    G3's are (both arms' stop actions, the recorded processes, every endpoint down)."""
    if loaded.config.gates.g2.serving is None:
        return []
    from harness.serving.engines import release_engines

    return release_engines(loaded, inventory, store, run_id, sudo_password=sudo_password)
