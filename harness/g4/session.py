"""G4's viewer: starts the detached soak (or re-attaches to it after a resume), stores its
windows as they close, reads the accelerator's devices itself, and judges the windows.

The soak runs in its own process (harness/loadgen/soak.py), on this machine or, with
`load.placement: client`, on the client host through the load agent (harness/g4/
placement.py), and survives this one: the gate process may be killed, or the laptop
closed, at any time; `gate resume RUN` re-attaches and carries on from the last window
stored (windows are stored by run and index, so a window read twice is stored once).
What this side measures itself, and the soak never sees, is the devices' read counters
(harness/serving/disks.py, as G3 reads them) and the engines' own counters
(harness/g4/engine_clock.py): the soak's own process may run on a host the vendor
controls, the gate's samples do not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config.inventory import Inventory
from harness.config.models import Layout, SiteConfig
from harness.errors import (
    CommandTimeoutError,
    GateError,
    InfrastructureError,
    UnreachableError,
)
from harness.g4 import devices as g4_devices
from harness.g4 import stored
from harness.g4.criteria import Criteria, judge
from harness.g4.documents import soak_spec
from harness.g4.hardware_probe import HardwareWatch
from harness.g4.judgement import Judgement
from harness.g4.outcome import G4Outcome, window_line
from harness.g4.placement import Place, Seen, place_for
from harness.g4.plan import criteria
from harness.g4.processes import Instance, ProcessWatch
from harness.g4.spool import SoakSpec, SoakState, Spool
from harness.loadgen.soak_windows import Window
from harness.progress_log import Step, finished
from harness.serving.arms import ArmControl, endpoints
from harness.serving.disks import DiskSource
from harness.serving.engines import EngineWatch
from harness.serving.gate_run import GateRun
from harness.verdict import Verdict

ARM = "accelerated"
SPOOL = "g4-soak"
START_WAIT_S = 30.0  # the soak writes its state within this, or it did not start
# the hard criteria: one missed ends the soak early (gates.g4.stop_early)
HARD = frozenset({"error_rate", "restarts", "engaged", "hardware"})
# The hosts' hardware is read at the soak's start, at its end, and at most this often
# between (a reading is several commands per host over SSH; errors are counters, so a
# slower reading misses none, it only names a later window).
HARDWARE_EVERY_S = 30.0

Event = Callable[..., None]
STOP_WAIT_S = 90.0  # a soak asked to stop (an error on this side) is killed after this
EDGE_LAG_S = 0.02  # a device sample this long after a window edge


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
    pool: Any = None  # the gate's TransportPool: the client host, with placement: client
    _processes: ProcessWatch | None = None
    _place: Place | None = None
    _state: SoakState | None = None  # as last seen (times on this machine's clock)
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

    def place(self) -> Place:
        """Where this run's soak runs: as its spool recorded it when there is one (a
        resume follows the soak, whatever the config says now), else as
        `load.placement` says (placement: client ships and verifies the agent first)."""
        if self._place is None:
            wheels = self.config.load.agent_wheels
            self._place = place_for(self.spool.root, resumable=self.resumable(),
                                    client=self.config.load.placement == "client",
                                    pool=self._pool, inventory=self.inventory,
                                    agent_wheels=self.gate.loaded.resolve(wheels)
                                    if wheels else None, run_id=self.gate.run_id,
                                    event=self.event)
        return self._place

    def _pool(self) -> Any:
        if self.pool is None:
            raise InfrastructureError("the G4 session has no transport pool for the client "
                                      "host", stage="g4 soak")
        return self.pool

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
            try:
                self.end_soak(str(exc))
            except GateError as again:  # the soak's host does not answer either
                self.event(source="harness", name="G4 soak stop", host=None, status="failed",
                           message=f"the soak could not be stopped: {again.one_line()}")
            self.finish()
            return self._outcome(spec, [], error=exc)
        self.finish()
        return self._outcome(spec, judged)

    def _outcome(self, spec: SoakSpec | None, judged: list[Judgement],
                 error: GateError | None = None) -> G4Outcome:
        state = self._state
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
        if not self.resumable():
            return
        seen = self.place().see(stored.last_window(self.gate.store, self.gate.run_id))
        if seen.state is not None and (seen.state.ended or not seen.alive):
            return
        self.place().stop(why, STOP_WAIT_S)

    def start(self) -> None:
        """Start the accelerated arm and the detached soak; returns once the soak runs."""
        place = self.place()  # placement: client ships the agent before any engine starts
        layout = self.layout
        self.control.start(ARM, layout)
        self.watch.observe(ARM, layout)  # recorded: stopped at the run's end or abort
        spec = soak_spec(self.config, endpoints(self.config, self.inventory, ARM, layout),
                         self.gate.run_id)
        self.sample_devices()  # the devices' counters before the soak's first window
        self.sample_hosts()  # the hosts' error counters and the engines' processes
        spool = self.spool
        spool.create(spec)  # here whatever the placement: the run's record of what ran
        place.start(spec)
        end = time.monotonic() + START_WAIT_S
        while (seen := place.see(spec.windows)).state is None:
            if time.monotonic() > end or not seen.alive:
                raise InfrastructureError(f"the soak did not start ({place.where})",
                                          stage="g4 soak", host=place.host,
                                          command=place.command, hint=place.log_hint())
            time.sleep(0.1)
        self._state = seen.state
        self.event(source="harness", name="G4 soak started",
                   host=place.host, status="ok",
                   message=f"{place.where}, {spec.windows} windows of {spec.window_s:g} s, "
                           f"c={spec.concurrency}, {len(spec.documents)} documents, "
                           f"spool {spool.root}")

    def attach(self) -> SoakState:
        """The soak this run started, still running or ended; ERROR when its process is
        gone without saying why (every window it wrote is kept)."""
        place = self.place()
        place.verify()  # the agent that runs the soak (placement: client) is the one shipped
        seen = self._look(place)
        state = seen.state
        if state is None:
            raise InfrastructureError("the soak's spool has no state: it never ran",
                                      stage="g4 soak", hint=f"see {self.spool.root}")
        self._state = state
        stored.window_files(self.gate.store, self.gate.run_id, seen.windows)
        if not state.ended and not seen.alive:
            raise InfrastructureError(
                f"the soak's process {state.pid} is gone without a word after "
                f"{state.windows_written} windows", stage="g4 soak",
                host=place.host, hint=place.log_hint())
        self.event(source="harness", name="G4 soak attached",
                   host=place.host, status="ok",
                   message=f"{place.where}, {state.status}, {state.windows_written} "
                           "windows written")
        return state

    def view(self) -> list[Judgement]:
        """Store windows as they close until the soak ends; the judgements over them.
        A hard criterion missed ends the soak early (gates.g4.stop_early)."""
        place = self.place()
        spec = self.spool.spec()
        shown = 0
        judged: list[Judgement] = []
        sampled = 0.0  # monotonic: the devices' last sample
        edge_sampled = time.time()  # epoch: likewise (start() made one)
        every = max(self.poll_s, spec.window_s / 4)  # 4 samples a window, as G3's 1 s
        hw_read = time.monotonic()  # the hardware's last reading (start() made one)
        hw_every = max(spec.window_s, HARDWARE_EVERY_S)
        verified = time.monotonic()  # the agent's last check (placement: client)
        while True:
            # just after each window edge, before the pull: a window's reads are the
            # counter's rise between its edges, interpolated between samples, so a sample
            # at each edge puts them where they were read (a pull over SSH may take
            # longer than a short window)
            if self._edge_since(edge_sampled, spec.window_s) is not None:
                edge_sampled = self.sample_devices()
            seen = self._look(place)
            state = seen.state
            if state is None:
                raise InfrastructureError("the soak's state vanished", stage="g4 soak")
            self._state = state
            new = stored.window_files(self.gate.store, self.gate.run_id, seen.windows)
            # after the pull: a window's file is written after its edge, so this sample
            # covers the end of every window just stored
            if new or state.ended or time.monotonic() - sampled >= every:
                edge_sampled = self.sample_devices()
                sampled = time.monotonic()
            if state.ended or time.monotonic() - hw_read >= hw_every:
                self.sample_hosts()
                hw_read = time.monotonic()
            if time.monotonic() - verified >= HARDWARE_EVERY_S:
                place.verify()
                verified = time.monotonic()
            if new or state.ended or not judged:
                windows = self.windows(spec, state)
                judged = self.judge(windows) if windows else []
                for w in windows[shown:]:
                    finished(Step("G4", ("soak", self.layout.name, window_line(w, judged)),
                                  w.index + 1, spec.windows, spec.window_s), spec.window_s)
                shown = len(windows)
                self._stop_early(place, judged)
            if seen.more:
                continue  # more windows are written than one look carries
            if state.ended and shown >= state.windows_written:
                place.verify()  # the agent whose pulls were stored is the one shipped
                if state.status == "failed":
                    raise InfrastructureError(f"the soak failed: {state.error}",
                                              stage="g4 soak", hint=place.log_hint(),
                                              host=place.host)
                return judged
            if not state.ended and not seen.alive:
                raise InfrastructureError(
                    f"the soak's process {state.pid} died after {shown} windows",
                    stage="g4 soak", host=place.host,
                    hint=place.log_hint())
            time.sleep(self._pause(place.poll_s(spec.window_s, self.poll_s), spec.window_s))

    def _edge_since(self, since: float, window_s: float) -> float | None:
        start = self._state.started_at if self._state is not None else 0.0
        return g4_devices.edge_since(start, window_s, since, time.time())

    def _pause(self, poll: float, window_s: float) -> float:
        """Until the next look: `poll`, or just after the next window edge if sooner."""
        start = self._state.started_at if self._state is not None else 0.0
        edge = g4_devices.next_edge(start, window_s, time.time())
        return poll if edge is None else max(0.01, min(poll, edge + EDGE_LAG_S - time.time()))

    def _look(self, place: Place) -> Seen:
        """The soak as the place finds it now, after the last window stored. A process
        found gone while its state says it runs is looked at once more: it may have
        written its last state and ended between the two reads of one look."""
        seen = place.see(stored.last_window(self.gate.store, self.gate.run_id))
        if seen.state is not None and not seen.state.ended and not seen.alive:
            again = place.see(stored.last_window(self.gate.store, self.gate.run_id))
            seen = Seen(again.state, again.alive, [*seen.windows, *again.windows],
                        again.more)
        return seen

    def _stop_early(self, place: Place, judged: Sequence[Judgement]) -> None:
        if not self.config.gates.g4.stop_early or self.stop_asked is not None:
            return
        # an unsampled window is not a miss yet: a device host that did not answer is read
        # again, and its reads spread over the gap; the final judgement holds it
        miss = next((j for j in judged if j.criterion in HARD
                     and j.verdict is Verdict.STOP_LOSS
                     and j.reason.code != "g4.not_engaged_unsampled"), None)
        if miss is not None:
            try:
                place.stop(f"{miss.criterion}: {miss.text}")
            except (UnreachableError, CommandTimeoutError):
                return  # the link, not the soak: asked again at the next look
            self.stop_asked = miss.text
            self.event(source="harness", name="G4 soak stopped early", host=None,
                       status="changed", message=miss.text)

    # --- the devices --------------------------------------------------------------------

    def sample_devices(self) -> float:
        """Every declared device counter, and the soaked engines' own counters, now,
        stored (harness/g4/stored.py, engine_clock.py)."""
        urls = [e.url for e in endpoints(self.config, self.inventory, ARM, self.layout)]
        return stored.sample_devices(self.gate.store, self.gate.run_id, self.storage,
                                     list(self.kv_volumes.values()), self.event, urls)

    def sample_hosts(self) -> None:
        """The slower readings: the hosts' hardware and which processes serve the soak."""
        if self.hardware is not None:
            self.hardware.sample()
        self.processes().sample()

    # --- the judgement ------------------------------------------------------------------

    def windows(self, spec: SoakSpec, state: SoakState) -> list[Window]:
        """The stored windows with the devices' reads attributed to each."""
        return stored.windows(self.gate.store, self.gate.run_id, state.started_at,
                              spec.window_s, storage=bool(self.storage),
                              kv_volume=bool(self.kv_volumes), poll_s=self.poll_s,
                              ended_at=state.started_at + state.windows_written
                              * spec.window_s if state.ended else None)

    def judge(self, windows: Sequence[Window]) -> list[Judgement]:
        """Every criterion so far; with no device declared at all the accelerator's reads
        cannot be seen, so no window can count as engaged."""
        c: Criteria = criteria(self.config)
        per_token = self.config.model.kv_bytes_per_token \
            / self.config.gates.g3.evidence.kv_compression
        client = self._place.host is not None if self._place is not None \
            else self.config.load.placement == "client"
        judged = judge(windows, c, per_token, kv_volume=bool(self.kv_volumes),
                       client_placement=client)
        if windows and self.hardware is not None:
            spec, state = self.spool.spec(), self._state
            declared = {str(k): why for k, why in self.config.gates.g4.unverifiable.items()}
            judged.append(self.hardware.judge(declared,
                                              state.started_at if state else 0.0,
                                              spec.window_s, len(windows)))
        return judged

    def store_reads(self, windows: Sequence[Window]) -> None:
        stored.store_reads(self.gate.store, self.gate.run_id, windows)

    def finish(self) -> None:
        """The soak ended: the arm stops (its engines were recorded when started)."""
        layout = self.layout
        try:
            self.control.stop(ARM, layout)
        finally:
            self.watch.stopped(ARM, layout)
