"""G4's viewer: starts the detached soak (or re-attaches to it after a resume), stores its
windows as they close, reads the accelerator's devices itself, and judges the windows.

The soak runs in its own process (harness/g4/soak.py) and survives this one: the gate
process may be killed, or the laptop closed, at any time; `gate resume RUN` re-attaches
and carries on from the last window stored (windows are stored by run and index, so a
window read twice is stored once). What this side measures itself, and the soak never
sees, is the devices' read counters (harness/serving/disks.py, as G3 reads them): the
soak's own process may run on a host the vendor controls, the gate's samples do not.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.inventory import Inventory
from harness.config.models import Layout, SiteConfig
from harness.errors import GateError, InfrastructureError
from harness.g4 import devices as g4_devices
from harness.g4 import soak as soak_proc
from harness.g4.counters import gpu_cache_tokens
from harness.g4.criteria import Criteria, Judgement, judge
from harness.g4.hardware_probe import HardwareWatch
from harness.g4.outcome import G4Outcome, window_line
from harness.g4.plan import criteria
from harness.g4.processes import METRIC as ENGINE_CHANGES
from harness.g4.processes import Instance, ProcessWatch, changes_per_window
from harness.g4.spool import SoakSpec, SoakState, Spool, window_row
from harness.g4.windows import Evidence, Window
from harness.loadgen.records import Endpoint
from harness.progress_log import Step, finished
from harness.serving.arms import ArmControl, endpoints
from harness.serving.cells import doc_seed, docs_for
from harness.serving.disks import DiskSource
from harness.serving.engines import EngineWatch
from harness.serving.gate_run import GateRun
from harness.store import windows as store_windows
from harness.store.writer import insert_series, series_of
from harness.verdict import Verdict

ARM = "accelerated"
SPOOL = "g4-soak"
# G4's documents are drawn apart from G2's and G3's: a prefix those gates computed must not
# reach the soak's engines as a warm one.
SEED_OFFSET = 2_000_000
STORAGE = "g4:device_read_bytes"
KV_VOLUME = "g4:kv_volume_read_bytes"
START_WAIT_S = 30.0  # the soak writes its state within this, or it did not start
# the hard criteria: one missed ends the soak early (gates.g4.stop_early)
HARD = frozenset({"error_rate", "restarts", "engaged", "hardware"})
# The hosts' hardware is read at the soak's start, at its end, and at most this often
# between (a reading is several commands per host over SSH; errors are counters, so a
# slower reading misses none, it only names a later window).
HARDWARE_EVERY_S = 30.0

Event = Callable[..., None]
STOP_WAIT_S = 90.0  # a soak asked to stop (an error on this side) is killed after this


@dataclass
class G4Session:
    gate: GateRun
    artifact_dir: Path
    control: ArmControl
    watch: EngineWatch
    event: Event
    storage: Sequence[DiskSource] = ()
    kv_volumes: dict[str, DiskSource] = field(default_factory=dict)
    hardware: HardwareWatch | None = None
    poll_s: float = 2.0
    _processes: ProcessWatch | None = None
    stop_asked: str | None = None

    @property
    def config(self) -> SiteConfig:
        return self.gate.loaded.config

    @property
    def inventory(self) -> Inventory:
        return self.gate.inventory

    @property
    def layout(self) -> Layout:
        wanted = self.config.gates.g4.layout
        return next((la for la in self.config.layouts if la.name == wanted),
                    self.config.layouts[0])

    @property
    def spool(self) -> Spool:
        return Spool(self.artifact_dir / SPOOL)

    def processes(self) -> ProcessWatch:
        """The gate's own reading of the soak's engine processes (g4/processes.py)."""
        if self._processes is None:
            eps = endpoints(self.config, self.inventory, ARM, self.layout)
            self._processes = ProcessWatch(
                self.watch.inspector,
                [Instance(e.host, self.layout.instances[e.instance].port, e.instance, e.url)
                 for e in eps], ARM, self.layout.name, self.gate.store, self.gate.run_id,
                self.event)
            self._processes.resume()
        return self._processes

    def resumable(self) -> bool:
        """A soak of this run already runs (or ended) in the spool: re-attach, never start
        a second one, never stop its engines."""
        return (self.spool.root / "spec.json").exists()

    # --- the soak -----------------------------------------------------------------------

    def run(self, clean_slate: Callable[[], None]) -> G4Outcome:
        """Start the soak (after `clean_slate`) or re-attach to this run's, view it to its
        end and judge it. Closing the gate (Ctrl-C) leaves the soak and its engines
        running for `gate resume`; an error here stops both."""
        spec: SoakSpec | None = None
        try:
            if self.resumable():
                self.attach()
            else:
                clean_slate()
                self.start()
            spec = self.spool.spec()
            judged = self.view()
        except KeyboardInterrupt:
            self.event(source="harness", name="G4 viewer closed", host=None, status="ok",
                       message=f"the soak goes on: `gate resume {self.gate.run_id}` "
                               f"re-attaches, `gate runs abort {self.gate.run_id}` stops it")
            raise
        except GateError as exc:
            self.end_soak(str(exc))
            self.finish()
            return self._outcome(spec, [], error=exc)
        self.finish()
        return self._outcome(spec, judged)

    def _outcome(self, spec: SoakSpec | None, judged: list[Judgement],
                 error: GateError | None = None) -> G4Outcome:
        state = self.spool.state()
        windows = self.windows(spec, state) if spec is not None and state is not None else []
        if windows:
            self.store_reads(windows)
            if error is None:
                judged = self.judge(windows)
        return G4Outcome(windows=windows, planned=spec.windows if spec else 0,
                         status=state.status if state else "not started", judged=judged,
                         criteria=criteria(self.config), stopped_early=self.stop_asked,
                         error=error)

    def end_soak(self, why: str) -> None:
        """Ask the soak to stop and wait for it (killed after STOP_WAIT_S)."""
        state = self.spool.state() if (self.spool.root / "spec.json").exists() else None
        if state is None or state.ended or not soak_proc.alive(state.pid):
            return
        self.spool.request_stop(why)
        soak_proc.terminate(state.pid, STOP_WAIT_S)

    def start(self) -> None:
        """Start the accelerated arm and the detached soak; returns once the soak runs."""
        layout = self.layout
        self.control.start(ARM, layout)
        self.watch.observe(ARM, layout)  # recorded: stopped at the run's end or abort
        eps = endpoints(self.config, self.inventory, ARM, layout)
        g4 = self.config.gates.g4
        spec = SoakSpec(
            endpoints=tuple(Endpoint(e.url, self.config.model.name, e.instance)
                            for e in eps),
            documents=tuple(self._documents(eps[0].url)), concurrency=g4.concurrency,
            duration_s=g4.duration, window_s=g4.window, api=self.config.workload.api,
            tag=f"gate-r{self.gate.run_id}")
        self.sample_devices()  # the devices' counters before the soak's first window
        self.sample_hosts()  # the hosts' error counters and the engines' processes
        spool = self.spool
        spool.create(spec)
        pid = soak_proc.start(spool.root)
        end = time.monotonic() + START_WAIT_S
        while spool.state() is None:
            if time.monotonic() > end or not soak_proc.alive(pid):
                log = (spool.root / soak_proc.LOG)
                tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
                raise InfrastructureError(f"the soak did not start: {tail.strip()}",
                                          stage="g4 soak",
                                          command=f"python -m harness.g4.soak {spool.root}")
            time.sleep(0.1)
        if self.config.load.placement == "client":  # the soak is not in the agent yet
            self.event(source="harness", name="G4 soak placement", host=None,
                       status="changed", message="load.placement is client, but G4's soak "
                       "runs on this machine in this version (docs/g4.md)")
        self.event(source="harness", name="G4 soak started", host=None, status="ok",
                   message=f"pid {pid}, {spec.windows} windows of {spec.window_s:g} s, "
                           f"c={spec.concurrency}, {len(spec.documents)} documents, "
                           f"spool {spool.root}")

    def _documents(self, url: str) -> list[Any]:
        """The soak's working set (gates.g4.documents), else enough documents for the
        concurrency and more than twice what the engine's GPU prefix cache holds when
        /metrics says its size, so each prefix is evicted before it comes round again and
        is loaded from the tier."""
        from harness.loadgen import doc_qa
        from harness.probes.prometheus import scrape

        wl = self.config.workload
        n = self.config.gates.g4.documents or 0
        if not n:
            n = docs_for(self.config.gates.g4.concurrency, wl.docs_per_concurrency,
                         wl.min_docs)
            try:
                cache = gpu_cache_tokens(scrape(url))
            except GateError:
                cache = None
            if cache:
                n = max(n, math.ceil(2 * cache / (wl.doc_tokens + wl.question_tokens)) + 1)
        work = doc_qa(n, wl.doc_tokens, wl.question_tokens, doc_seed(wl.seed, SEED_OFFSET),
                      max_tokens=wl.max_tokens, tokenize_url=url, model=self.config.model.name)
        return list(work.specs)

    def attach(self) -> SoakState:
        """The soak this run started, still running or ended; ERROR when its process is
        gone without saying why (every window it wrote is kept)."""
        state = self.spool.state()
        if state is None:
            raise InfrastructureError("the soak's spool has no state: it never ran",
                                      stage="g4 soak", hint=f"see {self.spool.root}")
        if not state.ended and not soak_proc.alive(state.pid):
            raise InfrastructureError(
                f"the soak's process {state.pid} is gone without a word after "
                f"{state.windows_written} windows", stage="g4 soak",
                hint=f"its log: {self.spool.root / soak_proc.LOG}")
        self.event(source="harness", name="G4 soak attached", host=None, status="ok",
                   message=f"pid {state.pid}, {state.status}, {state.windows_written} "
                           "windows written")
        return state

    def view(self) -> list[Judgement]:
        """Store windows as they close until the soak ends; the judgements over them.
        A hard criterion missed ends the soak early (gates.g4.stop_early)."""
        spool = self.spool
        spec = spool.spec()
        shown = 0
        judged: list[Judgement] = []
        sampled = 0.0  # monotonic: the devices' last sample
        every = max(self.poll_s, spec.window_s / 4)  # 4 samples a window, as G3's 1 s
        hw_read = time.monotonic()  # the hardware's last reading (start() made one)
        hw_every = max(spec.window_s, HARDWARE_EVERY_S)
        while True:
            state = spool.state()
            if state is None:
                raise InfrastructureError("the soak's state vanished", stage="g4 soak")
            new = self._pull(spool)
            # after the pull: a window's file is written after its edge, so this sample
            # covers the end of every window just stored
            if new or state.ended or time.monotonic() - sampled >= every:
                self.sample_devices()
                sampled = time.monotonic()
            if state.ended or time.monotonic() - hw_read >= hw_every:
                self.sample_hosts()
                hw_read = time.monotonic()
            if new or state.ended or not judged:
                windows = self.windows(spec, state)
                judged = self.judge(windows) if windows else []
                for w in windows[shown:]:
                    finished(Step("G4", ("soak", self.layout.name, window_line(w, judged)),
                                  w.index + 1, spec.windows, spec.window_s), spec.window_s)
                shown = len(windows)
                self._stop_early(spool, judged)
            if state.ended and shown >= state.windows_written:
                if state.status == "failed":
                    raise InfrastructureError(f"the soak failed: {state.error}",
                                              stage="g4 soak",
                                              hint=f"its log: {spool.root / soak_proc.LOG}")
                return judged
            if not state.ended and not soak_proc.alive(state.pid):
                raise InfrastructureError(
                    f"the soak's process {state.pid} died after {shown} windows",
                    stage="g4 soak", hint=f"its log: {spool.root / soak_proc.LOG}")
            time.sleep(min(self.poll_s, spec.window_s / 2))

    def _stop_early(self, spool: Spool, judged: Sequence[Judgement]) -> None:
        if not self.config.gates.g4.stop_early or self.stop_asked is not None:
            return
        # an unsampled window is not a miss yet: a device host that did not answer is read
        # again, and its reads spread over the gap; the final judgement holds it
        miss = next((j for j in judged if j.criterion in HARD
                     and j.verdict is Verdict.STOP_LOSS
                     and j.reason.code != "g4.not_engaged_unsampled"), None)
        if miss is not None:
            self.stop_asked = miss.text
            spool.request_stop(f"{miss.criterion}: {miss.text}")
            self.event(source="harness", name="G4 soak stopped early", host=None,
                       status="changed", message=miss.text)

    def _pull(self, spool: Spool) -> int:
        """Store the windows the soak wrote since the last pull (by index: idempotent)."""
        last = store_windows.last_index(self.gate.store, self.gate.run_id)
        rows = [window_row(spool.read_window(k)) for k in spool.window_indices()
                if last is None or k > last]
        if rows:
            store_windows.upsert_windows(self.gate.store, self.gate.run_id, rows)
        return len(rows)

    # --- the devices --------------------------------------------------------------------

    def sample_devices(self) -> None:
        """Every declared device counter now, stored (a resumed viewer carries on from
        the last). A host that does not answer is an event, not a stop: its windows stay
        unsampled until it answers again."""
        now = time.time()
        rows = []
        for metric, sources in ((STORAGE, list(self.storage)),
                                (KV_VOLUME, list(self.kv_volumes.values()))):
            for source in sources:
                try:
                    rows.append({"source": source.host, "metric": metric, "labels": {},
                                 "at": now, "value": float(source.bytes_read())})
                except (GateError, OSError) as exc:
                    self.event(source="harness", name="G4 device sample", host=source.host,
                               status="failed", message=str(exc)[:500])
        insert_series(self.gate.store, self.gate.run_id, rows)

    def sample_hosts(self) -> None:
        """The slower readings: the hosts' hardware and which processes serve the soak."""
        if self.hardware is not None:
            self.hardware.sample()
        self.processes().sample()

    # --- the judgement ------------------------------------------------------------------

    def windows(self, spec: SoakSpec, state: SoakState) -> list[Window]:
        """The stored windows with the devices' reads attributed to each."""
        stored = store_windows.windows(self.gate.store, self.gate.run_id)
        n = len(stored)
        store, run = self.gate.store, self.gate.run_id
        reads = g4_devices.summed(series_of(store, run, STORAGE), state.started_at,
                                  spec.window_s, n) if self.storage else None
        vol = g4_devices.summed(series_of(store, run, KV_VOLUME), state.started_at,
                                spec.window_s, n) if self.kv_volumes else None
        changes = changes_per_window(series_of(store, run, ENGINE_CHANGES), state.started_at,
                                     spec.window_s, n)
        sampled = {f"{metric}:{host}": samples for metric in (STORAGE, KV_VOLUME)
                   for host, samples in series_of(store, run, metric).items()}
        gaps = g4_devices.spread(sampled, state.started_at, spec.window_s, n,
                                 max_gap_s=2 * max(spec.window_s, self.poll_s))
        out = []
        for i, row in enumerate(stored):
            ev = Evidence(external_hit_tokens=row["external_hit_tokens"],
                          device_read_bytes=reads[i] if reads is not None else None,
                          kv_volume_read_bytes=vol[i] if vol is not None else None,
                          engine_rss_bytes=row["engine_rss_bytes"],
                          engine_restarts=int(row["engine_restarts"] or 0),
                          engine_changes=changes[i], spread_from=gaps[i])
            out.append(Window(index=int(row["idx"]), start_s=float(row["start_s"]),
                              length_s=float(row["length_s"]), requests=int(row["requests"]),
                              errors=dict(row["errors"] or {}),
                              ttft_p50_s=row["ttft_p50_s"], ttft_p99_s=row["ttft_p99_s"],
                              tpot_p50_s=row["tpot_p50_s"],
                              output_tokens=int(row["output_tokens"] or 0), evidence=ev))
        return out

    def judge(self, windows: Sequence[Window]) -> list[Judgement]:
        """Every criterion so far; with no device declared at all the accelerator's reads
        cannot be seen, so no window can count as engaged."""
        c: Criteria = criteria(self.config)
        per_token = self.config.model.kv_bytes_per_token \
            / self.config.gates.g3.evidence.kv_compression
        judged = judge(windows, c, per_token, kv_volume=bool(self.kv_volumes))
        if windows and self.hardware is not None:
            spec, state = self.spool.spec(), self.spool.state()
            declared = {str(k): why for k, why in self.config.gates.g4.unverifiable.items()}
            judged.append(self.hardware.judge(declared,
                                              state.started_at if state else 0.0,
                                              spec.window_s, len(windows)))
        return judged

    def store_reads(self, windows: Sequence[Window]) -> None:
        """The attributed device reads onto the stored windows (the report shows them)."""
        rows = [{"idx": w.index, "start_s": w.start_s, "length_s": w.length_s,
                 "requests": w.requests,
                 "device_read_bytes": w.evidence.device_read_bytes,
                 "kv_volume_read_bytes": w.evidence.kv_volume_read_bytes} for w in windows]
        if rows:
            store_windows.upsert_windows(self.gate.store, self.gate.run_id, rows)

    def finish(self) -> None:
        """The soak ended: the arm stops (its engines were recorded when started)."""
        layout = self.layout
        try:
            self.control.stop(ARM, layout)
        finally:
            self.watch.stopped(ARM, layout)
