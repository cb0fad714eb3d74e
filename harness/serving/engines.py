"""What actually runs behind each arm's endpoints, and that nothing is left running.

After every start or restart action the engine process listening on each instance's
port is read from /proc on its host (argv, environment, start time, and what code it runs:
executable, cwd, libraries, packages, model files) together with what the server says
about itself (/v1/models, /version, /metrics info labels), and each endpoint's listener
must be that engine or a declared proxy (harness/serving/inspection.py). The two arms'
facts are compared key by key; only the differences `arms.accelerated.differs_by` allows
may remain (harness/serving/identity.py). Every process seen is recorded in the store, so the
run stops it at its end, and the next run, resume or abort of the campaign stops whatever
a killed run left behind. Before a run or a resume, both arms' stop actions run and every
endpoint must be down.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.config.models import Layout, SiteConfig
from harness.errors import GateError, InfrastructureError, TransportError
from harness.probes.process import ProcessInfo, is_alive, stop_process
from harness.serving.arms import ArmControl, Endpoint, EventSink, endpoints
from harness.serving.cells import ARMS
from harness.serving.enginelogs import EngineLogs
from harness.serving.identity import ArmComparison, compare_arms, engine_facts, server_config
from harness.serving.inspection import Inspector
from harness.serving.problems import JSON
from harness.store import Store
from harness.store import engines as store_engines
from harness.store import runs as store_runs
from harness.store.recorder import RunRecorder
from harness.transport import TransportPool

STOP_GRACE = 30.0  # seconds a stop action's process may take to exit before gate stops it


@dataclass(frozen=True)
class Observation:
    """One arm's engines right after a start or restart: facts per instance, and why
    some could not be read (any such problem keeps the arms from being compared)."""

    arm: str
    layout: str
    facts: list[dict[str, str]]
    problems: list[str] = field(default_factory=list)
    # Per instance: (pid, start ticks) of the engine process, None where it could not be
    # read. Two observations around a restart show whether the process was replaced.
    processes: list[tuple[int, int] | None] = field(default_factory=list)
    # Per instance: the shared objects the engine maps (its `proc:libs` fact is their
    # digest), so a difference can name them.
    libs: list[frozenset[str]] = field(default_factory=list)


def _get(url: str, timeout: float = 10.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            text: str = resp.read().decode("utf-8", "replace")
            return text if resp.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _json(text: str | None) -> JSON:
    if text is None:
        return None
    try:
        parsed: JSON = json.loads(text)
        return parsed
    except ValueError:
        return None


def read_server(url: str) -> dict[str, str]:
    """What the server reports about its own configuration (empty when it says nothing)."""
    return server_config(_json(_get(url + "/v1/models")), _json(_get(url + "/version")),
                         _get(url + "/metrics") or "")


@dataclass
class EngineWatch:
    """Reads, records and stops the engines of one gate run."""

    config: SiteConfig
    inventory: Inventory
    pool: TransportPool
    store: Store
    run_id: int
    event: EventSink
    # Hosts whose engines could be read only with sudo: go there directly next time (one
    # SSH round trip per reading instead of two).
    sudo_hosts: set[str] = field(default_factory=set)
    # The arms' own log files, fetched after each stop (None: not collected, e.g. the
    # clean slate of `gate runs abort`).
    logs: EngineLogs | None = None

    @property
    def inspector(self) -> Inspector:
        return Inspector(self.config, self.inventory, self.pool, self.sudo_hosts)

    def observe(self, arm: str, layout: Layout, *, as_fact: bool = False) -> Observation:
        """Read (and record) every instance's engine of the arm; call after start/restart.
        `as_fact`: also store the reading as a host fact (the preflight's, which the
        report shows; a pair's readings are stored with its measured phases). With
        engine_process_check on: what code the engine runs, and the endpoint's listener
        (the engine itself or a declared proxy, harness/serving/inspection.py). The
        instances are read at once (a TP4x2 arm's two take the time of one); they are
        recorded in order, from this thread."""
        eps = endpoints(self.config, self.inventory, arm, layout)
        look = self.inspector
        if len(eps) == 1:
            readings = [self._read(look, arm, layout, eps[0])]
        else:
            with ThreadPoolExecutor(len(eps), thread_name_prefix="gate-observe") as pool:
                readings = list(pool.map(lambda ep: self._read(look, arm, layout, ep), eps))
        check_process = self.config.gates.g3.engine_process_check
        facts, problems = [], []
        processes: list[tuple[int, int] | None] = []
        libs: list[frozenset[str]] = []
        for ep, (proc, f, found, lib) in zip(eps, readings, strict=True):
            processes.append(self._record(arm, layout, ep, proc))
            if check_process:
                problems += found
            libs.append(lib)
            facts.append(f)
            if as_fact:
                store_runs.add_host_fact(
                    self.store, self.run_id, host=ep.host,
                    key=f"engine identity {arm} {layout.name}#{ep.instance}",
                    value={"pid": proc.pid if proc else None, "url": ep.url, "facts": f,
                           "problem": "; ".join(found), "libs": sorted(lib)})
        return Observation(arm, layout.name, facts, problems, processes, libs)

    def _read(self, look: Inspector, arm: str, layout: Layout, ep: Endpoint
              ) -> tuple[ProcessInfo | None, dict[str, str], list[str], frozenset[str]]:
        """One instance's engine: (its process, facts, problems, mapped libraries). Reads
        only: nothing is stored here (this may run on a worker thread)."""
        check_process = self.config.gates.g3.engine_process_check
        port = layout.instances[ep.instance].port
        seen = look.engine(ep.host, port, read_code=check_process)
        proc = seen.proc
        server = read_server(ep.url)
        found: list[str] = [seen.problem] if seen.problem else []
        if check_process and proc is not None:
            f = engine_facts(list(proc.argv), dict(proc.env or {}), server)
        else:
            f = engine_facts([], {}, server)
        if check_process:
            if seen.running is not None:
                f.update(seen.running.facts)
                found += seen.running.problems
            more, why = look.endpoint(arm, ep, port, proc)
            f.update(more)
            found += why
        return proc, f, found, seen.running.libs if seen.running is not None else frozenset()

    def track(self, arm: str, layout: Layout) -> Observation:
        """Record the arm's engine processes (pid, start ticks) without reading what they
        run or say. For a start whose phase is not measured (G3's warm-up): the cold
        restart before the measured phase is read in full, and what the warm-up ran is
        evidence of nothing. Enough for the cold-restart check and for stopping the
        engines at the run's end, without a code read's cost (~0.1 s an instance on the
        simulator, seconds for a real engine's package tree)."""
        look = self.inspector
        processes = [self._record(arm, layout, ep,
                                  look.listener(ep.host, layout.instances[ep.instance].port).proc)
                     for ep in endpoints(self.config, self.inventory, arm, layout)]
        return Observation(arm, layout.name, [], [], processes, [])

    def _record(self, arm: str, layout: Layout, ep: Endpoint,
                proc: ProcessInfo | None) -> tuple[int, int] | None:
        """Store the engine process seen on the endpoint's instance (so the run stops it
        at its end); its (pid, start ticks), or None when none was seen."""
        if proc is None:
            return None
        store_engines.record_engine(
            self.store, self.run_id, host=ep.host, pid=proc.pid,
            start_ticks=proc.start_ticks, arm=arm, layout=layout.name,
            instance=ep.instance, url=ep.url)
        return proc.pid, proc.start_ticks

    def compare(self, base: Observation, acc: Observation) -> ArmComparison:
        assert self.config.arms is not None
        return compare_arms(base.facts, acc.facts, self.config.arms.accelerated.differs_by,
                            libs=(base.libs, acc.libs))

    # -- stopping ------------------------------------------------------------------------
    def _stop(self, proc: store_engines.EngineProcess, grace: float, why: str) -> None:
        """Make sure a recorded process is gone; stop it if it is not (never another
        process that reused its pid: the start ticks must match)."""
        if proc.host not in self.inventory.hosts:
            return
        transport = self.pool.get(proc.host)
        deadline = time.monotonic() + grace
        while is_alive(transport, proc.pid, proc.start_ticks):
            if time.monotonic() >= deadline:
                try:
                    outcome: str = stop_process(transport, proc.pid, proc.start_ticks)
                except TransportError:  # another user's engine (started with become)
                    outcome = stop_process(transport, proc.pid, proc.start_ticks, sudo=True)
                self.event(source="harness", name=f"stop engine pid {proc.pid} ({why})",
                           host=proc.host, status="ok", message=outcome)
                store_engines.mark_gone(self.store, proc.id, f"{why}: {outcome}")
                return
            time.sleep(0.2)
        store_engines.mark_gone(self.store, proc.id, "gone")

    def stopped(self, arm: str, layout: Layout) -> None:
        """After an arm's stop action: its recorded engines are gone, or gate stops them."""
        for proc in store_engines.open_engines(self.store, run_id=self.run_id):
            if (proc.arm, proc.layout) == (arm, layout.name):
                self._stop(proc, STOP_GRACE, f"still running after the {arm} stop action")
        if self.logs is not None:
            self.logs.collect(arm, layout)

    def sweep(self, campaign_id: int | None = None) -> None:
        """Stop every recorded engine still running: this run's at its end, or (with a
        campaign) whatever earlier runs of the campaign left behind."""
        open_ = store_engines.open_engines(
            self.store, run_id=None if campaign_id is not None else self.run_id,
            campaign_id=campaign_id)
        for proc in open_:
            try:
                self._stop(proc, 0.0, "left running" if campaign_id is not None
                           else "still running at the end of its run")
            except GateError as exc:  # one unreachable host must not keep the others up
                self.event(source="harness", name=f"stop engine pid {proc.pid}",
                           host=proc.host, status="failed", message=exc.one_line())


def endpoint_answers(url: str, timeout: float = 2.0) -> bool:
    """Does anything accept a TCP connection at the URL's host and port?"""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def clean_slate(watch: EngineWatch, control: ArmControl, layouts: list[Layout],
                campaign_id: int) -> None:
    """Before a run, a resume or an abort: what earlier runs left is stopped, both arms'
    stop actions run on every layout, and every endpoint must be down."""
    watch.sweep(campaign_id=campaign_id)
    for layout in layouts:
        for arm in ARMS:
            control.stop(arm, layout)
    for layout in layouts:
        for inst in layout.instances:
            # The engine's own port (a declared endpoint may be a proxy in front of it).
            address = watch.inventory.host(inst.host).address \
                if inst.host in watch.inventory.hosts else inst.host
            url = f"{inst.scheme}://{address}:{inst.port}"
            if endpoint_answers(url):
                raise InfrastructureError(
                    f"{url} still answers after both arms' stop actions: something gate did "
                    "not start is serving there", host=inst.host, stage="clean slate",
                    hint="stop it (or fix the arms' stop actions), then run again")


def release_engines(loaded: LoadedConfig, inventory: Inventory, store: Store, run_id: int, *,
                    sudo_password: str | None) -> list[str]:
    """`gate runs abort`: stop what the dead run left running (the clean slate a resume
    or a new run starts from): first its load phases on the client host (their records
    stored), then the engines. Returns what the user should know."""
    from harness.remote.placement import load_executor, stop_left_phases
    from harness.serving.arms import transport_action_runner
    from harness.serving.cells import layouts
    from harness.transport import TransportPool

    config = loaded.config
    recorder = RunRecorder(store, run_id)
    event = recorder.event

    pool = TransportPool(inventory, known_hosts=loaded.known_hosts_path,
                         sudo_password=sudo_password)
    lines = []
    try:
        if config.load.placement == "client":
            try:
                left = stop_left_phases(load_executor(loaded, inventory, pool, run_id), store,
                                        run_id)
                lines += [f"load: {line}" for line in left] or [
                    "load: no phase of this run was left on the client host"]
            except GateError as exc:
                lines.append(f"load: {exc.one_line()}")
        runner = transport_action_runner(pool, inventory, loaded.known_hosts_path,
                                         loaded.base / "artifacts" / f"run-{run_id}", event,
                                         become_password=sudo_password)
        watch = EngineWatch(config, inventory, pool, store, run_id, event)
        try:
            clean_slate(watch, ArmControl(config, inventory, runner), layouts(config),
                        recorder.campaign_id)
        except GateError as exc:
            return [*lines, f"engines: {exc.one_line()}"]
        return [*lines, "engines: both arms' stop actions ran; every endpoint is down"]
    finally:
        pool.close()
