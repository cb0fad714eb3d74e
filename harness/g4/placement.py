"""Where G4's soak runs (`load.placement`), seen the same way from the viewer.

`local`: a detached process on the gate's machine (harness/loadgen/soak.py), its spool
`artifacts/run-N/g4-soak/` read directly. `client`: the load agent runs the same soak
detached on the inventory's first [client] host, next to the engines; its spool is
`~/.gate/soaks/runN-TIME-ID/` there, read with `gate-agent soak-pull` over the gate's own
Transport (harness/remote/soak_client.py). Either way the local spool directory holds the
spec (what ran); a client soak's directory also holds `client.json` (the host, the spool
there, the agent's argv and the wheels it was shipped from, written before the soak
starts), so `gate resume` and `gate runs abort` find it whatever the config says now, and
`client-state.json`, the last state pulled (for `gate status`, which does not connect).

The agent is verified on the gate's side (harness/remote/verify.py): before the soak
starts, when a viewer attaches, every HARDWARE_EVERY_S while it views and once the soak
has ended; a changed agent is ERROR naming the host and the file.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from harness.config.inventory import Inventory
from harness.errors import (
    CommandTimeoutError,
    GateError,
    InfrastructureError,
    MeasurementError,
    UnreachableError,
)
from harness.g4 import soak as soak_proc
from harness.g4.spool import SoakSpec, SoakState, Spool, write_json
from harness.remote.soak_client import ROOT, RemoteSoak
from harness.remote.verify import AgentGuard, shipped
from harness.transport.base import Transport

CLIENT = "client.json"
CLIENT_STATE = "client-state.json"
RECONNECT_S = 600.0  # a client host that does not answer for this long ends the viewing
# A client spool whose soak ended and was not written for this long is removed at the next
# soak's start there: a 72 h soak and a viewer away for a week are well inside it.
SPOOL_KEEP_DAYS = 14.0

Event = Callable[..., None]


@dataclass(frozen=True)
class Seen:
    """The soak as one look finds it: its state (times on the gate's clock), whether its
    process runs, and the window files written after the index asked for."""

    state: SoakState | None
    alive: bool
    windows: list[dict[str, Any]] = field(default_factory=list)
    more: bool = False  # more windows are written than this look carried


class Place(Protocol):
    where: str  # "pid 123 on this machine", "pid 123 on c1"

    @property
    def host(self) -> str | None: ...  # None: this machine
    @property
    def command(self) -> str: ...  # what starts the soak, for an error's words

    def start(self, spec: SoakSpec) -> None: ...
    def see(self, after: int) -> Seen: ...
    def stop(self, why: str, kill_after: float | None = None) -> None: ...
    def verify(self) -> None: ...
    def log_hint(self) -> str: ...
    def poll_s(self, window_s: float, poll_s: float) -> float: ...


@dataclass
class LocalPlace:
    """The soak as a detached process on this machine."""

    root: Path
    pid: int = 0  # from the start, until the soak writes its own state
    where: str = "this machine"

    @property
    def spool(self) -> Spool:
        return Spool(self.root)

    @property
    def host(self) -> str | None:
        return None

    @property
    def command(self) -> str:
        return f"python -m {soak_proc.MODULE} {self.root}"

    def start(self, spec: SoakSpec) -> None:
        self.pid = soak_proc.start(self.root)
        self.where = f"pid {self.pid} on this machine"

    def see(self, after: int) -> Seen:
        spool = self.spool
        state = spool.state()
        pid = state.pid if state is not None else self.pid
        if state is not None:
            self.where = f"pid {state.pid} on this machine"
        windows = [spool.read_window(k) for k in spool.window_indices() if k > after]
        return Seen(state, soak_proc.alive(pid), windows)

    def stop(self, why: str, kill_after: float | None = None) -> None:
        self.spool.request_stop(why)
        state = self.spool.state()
        if kill_after is not None and state is not None and soak_proc.alive(state.pid):
            soak_proc.terminate(state.pid, kill_after)

    def verify(self) -> None:
        """Nothing: the soak runs this gate's own code."""

    def log_hint(self) -> str:
        return f"its log: {self.root / soak_proc.LOG}"

    def poll_s(self, window_s: float, poll_s: float) -> float:
        return min(poll_s, window_s / 2)


@dataclass
class ClientPlace:
    """The soak run by the load agent on the client host (see the module docstring)."""

    root: Path  # the local spool directory (spec.json, client.json, client-state.json)
    remote: RemoteSoak
    guard: AgentGuard | None  # None: an agent not shipped by a gate (tests of this class)
    event: Event
    reconnect_s: float = RECONNECT_S
    where: str = "the client host"
    log: str = ""  # the agent's log, as the last pull ended it
    _last: Seen | None = None
    _failing_since: float | None = None

    @property
    def host(self) -> str | None:
        return self.remote.host

    @property
    def command(self) -> str:
        return f"gate-agent soak-start --dir {self.remote.directory}"

    def start(self, spec: SoakSpec) -> None:
        self.verify()  # nothing runs on an agent the gate did not ship
        self._said("G4 soak spools", "sweep", lambda: self.remote.sweep(SPOOL_KEEP_DAYS),
                   f"ended, not written for {SPOOL_KEEP_DAYS:g} days")
        pid = self.remote.start(spec.to_dict())
        self.where = f"pid {pid if pid is not None else '(systemd)'} on {self.host}"

    def see(self, after: int) -> Seen:
        """One pull; while the host does not answer (a cut link, sshd restarting) the
        last look stands, for up to `reconnect_s`: the soak goes on writing there, and
        the next pull takes up from the last window stored."""
        try:
            got = self.remote.pull(after)
        except (UnreachableError, CommandTimeoutError) as exc:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
                self.event(source="harness", name="G4 soak pull", host=self.host,
                           status="failed", message=f"{exc.one_line()[:400]}; the soak "
                           f"goes on there, retried for {self.reconnect_s:g} s")
            if now - self._failing_since > self.reconnect_s:
                raise
            last = self._last or Seen(None, True)
            return Seen(last.state, True)
        if self._failing_since is not None:
            self._failing_since = None
            self.event(source="harness", name="G4 soak pull", host=self.host, status="ok",
                       message="the client host answers again")
        state = SoakState.from_dict(got.state) if got.state is not None else None
        if got.state is not None:
            write_json(self.root / CLIENT_STATE, got.state)
        if state is not None and state.pid:
            self.where = f"pid {state.pid} on {self.host}"
        # no state yet (systemd-run, whose pid the soak writes itself): alive until the
        # start's wait runs out
        self._last = Seen(state, got.alive or state is None, got.windows, got.more)
        self.log = got.log
        return self._last

    def stop(self, why: str, kill_after: float | None = None) -> None:
        self.remote.stop(why, kill_after)

    def clean(self, stored: int) -> bool:
        """Remove the soak's spool on the client host once every window it wrote is
        stored (`stored`: the last index in the store); kept while the soak runs or a
        window is not stored yet (a resume needs it). Never fails the run: an event says
        what happened. True when it was removed."""
        answer = self._said("G4 soak spool", "clean", lambda: self.remote.clean(stored),
                            f"every window stored (through {stored})")
        return bool(answer and answer.get("removed"))

    def _said(self, name: str, what: str, call: Callable[[], dict[str, Any]],
              why: str) -> dict[str, Any] | None:
        """Housekeeping on the client host, recorded as one event (never an error)."""
        try:
            answer = call()
        except GateError as exc:
            self.event(source="harness", name=name, host=self.host, status="failed",
                       message=f"{what}: {exc.one_line()[:400]}")
            return None
        removed = [str(n) for n in answer.get("removed") or []]
        kept = answer.get("kept") if isinstance(answer.get("kept"), dict) else {}
        if removed or what == "clean":
            parent = PurePosixPath(self.remote.directory).parent
            words = [f"removed ~/{parent}/{n} ({why})" for n in removed]
            words += [f"kept ~/{parent}/{n}: {w}" for n, w in (kept or {}).items()]
            self.event(source="harness", name=name, host=self.host,
                       status="changed" if removed else "ok", message="; ".join(words))
        return answer

    def verify(self) -> None:
        if self.guard is not None:
            self.guard.check()

    def log_hint(self) -> str:
        tail = f"; it ends: {self.log}" if self.log else ""
        return f"its log: ~/{self.remote.directory}/agent.log on {self.host}{tail}"

    def poll_s(self, window_s: float, poll_s: float) -> float:
        return client_poll_s(window_s, poll_s)


def client_poll_s(window_s: float, poll_s: float) -> float:
    """Each pull starts a Python on the client host, which also runs the load: a quarter
    window (at most 15 s) is often enough to see each window soon after it closes, at
    well under 1 % of a core there (benchmarks/g4_agent.py)."""
    return max(min(poll_s, window_s / 2), min(window_s / 4, 15.0))


def new_client(root: Path, transport: Transport, argv: list[str], venv: str, site: str,
               wheels: tuple[Path, ...], guard: AgentGuard, run_id: int,
               event: Event) -> ClientPlace:
    """A client soak about to start: its directory there named by run and time (two
    sites' run 1 never share one), recorded in client.json before anything starts."""
    name = f"run{run_id}-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    host = str(getattr(transport, "host", "client"))
    directory = f"{ROOT}/{name}"
    write_json(root / CLIENT, {"host": host, "directory": directory, "argv": list(argv),
                               "venv": venv, "site": site, "wheels": [str(w) for w in wheels]})
    return ClientPlace(root, RemoteSoak(transport, argv, directory), guard, event)


def client_record(root: Path) -> dict[str, Any] | None:
    """client.json of a soak the gate started on the client host, or None (local)."""
    try:
        doc = json.loads((root / CLIENT).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InfrastructureError(f"cannot read {CLIENT} of the soak: {exc}",
                                  stage="g4 spool", hint=f"see {root}") from None
    return doc if isinstance(doc, dict) else None


def attach_client(root: Path, record: dict[str, Any], transport: Transport,
                  event: Event) -> ClientPlace:
    """The client soak `record` names, to re-attach to: never reinstalled under the
    running soak, only verified (against the wheels it was shipped from)."""
    host = str(record.get("host"))
    try:
        ship = shipped([Path(w) for w in record["wheels"]])
    except (OSError, KeyError, ValueError) as exc:
        raise MeasurementError(f"the agent running the soak cannot be verified: the wheels "
                               f"it was shipped from are not readable here ({exc})",
                               host=host, stage="load agent check") from None
    guard = AgentGuard(transport, str(record["venv"]), str(record["site"]), ship)
    return ClientPlace(root, RemoteSoak(transport, [str(a) for a in record["argv"]],
                                        str(record["directory"])), guard, event,
                       where=f"on {host}")


def last_client_state(root: Path) -> SoakState | None:
    """The client soak's state as the last viewer pulled it (`gate status`)."""
    try:
        return SoakState.from_dict(json.loads((root / CLIENT_STATE).read_text()))
    except (OSError, ValueError, GateError):
        return None


def place_for(root: Path, *, resumable: bool, client: bool, pool: Callable[[], Any],
              inventory: Inventory, agent_wheels: Path | None, run_id: int,
              event: Event) -> Place:
    """Where the soak of spool `root` runs: as the spool recorded it when there is one (a
    resume follows the soak, whatever the config says now), else as `load.placement`
    says (`client`: the agent is shipped first; `pool()`: the gate's TransportPool)."""
    record = client_record(root) if resumable else None
    if record is not None:
        return attach_client(root, record, pool().get(str(record["host"])), event)
    if resumable or not client:
        return LocalPlace(root)
    from harness.remote.placement import client_agent

    agent = client_agent(inventory, pool(), agent_wheels)
    root.mkdir(parents=True, exist_ok=True)
    installed = agent.installed
    return new_client(root, agent.transport, installed.argv, installed.venv, installed.site,
                      installed.wheels, agent.guard, run_id, event)
