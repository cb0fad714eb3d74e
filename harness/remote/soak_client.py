"""The gate's side of a soak the load agent runs on the client host (`placement: client`).

Every exchange is one short command over the gate's own Transport (plain argv, no shell):
`gate-agent soak-start` once, `soak-pull --after K` every few seconds (the soak's state
and every window written after K; the gate stores windows by (run, index), so a window
pulled twice is stored once), `soak-stop` to end it early, `soak-clean` to remove its
spool there once every window is stored (and, at each start, the spools of soaks ended
long ago that no viewer came back for). The soak itself never needs this side: it writes
its spool on the client host whether or not anyone reads it.

The soak's clock is the client host's. Its start (`started_at`) places each window on
the gate's clock, where the accelerator's device reads are sampled
(harness/g4/devices.py): each pull carries the host's time, and the offset measured on the
pull with the shortest round trip so far moves the soak's times onto the gate's clock,
when it is larger than that round trip. A smaller one cannot be told from the pull's own
delays (the host's Python starts before it reads its clock, so the estimate leans by
tens of ms even between two namespaces of one kernel): the clocks are taken to agree,
as NTP keeps them.
"""

from __future__ import annotations

import json
import math
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from harness.errors import MeasurementError, ParseError
from harness.transport.base import Transport

STAGE = "soak (agent)"
ROOT = ".gate/soaks"  # relative to the login's home on the client host


@dataclass(frozen=True)
class SoakPull:
    """One `soak-pull` answer, the soak's times already on the gate's clock."""

    state: dict[str, Any] | None
    alive: bool
    windows: list[dict[str, Any]]
    more: bool  # more windows are written than this answer carried
    log: str


@dataclass
class RemoteSoak:
    """One soak's spool directory on the client host, read through `agent` (the argv that
    runs gate-agent there)."""

    transport: Transport
    agent: Sequence[str]
    directory: str  # relative to the login's home
    offset: float = 0.0  # the host's clock minus the gate's (s)
    rtt: float = math.inf  # of the pull the offset was measured on
    clock: Callable[[], float] = field(default=time.time)

    @property
    def host(self) -> str:
        return str(getattr(self.transport, "host", "client"))

    def _command(self, *args: str) -> list[str]:
        return [*self.agent, *args, "--dir", self.directory]

    def start(self, spec: Mapping[str, Any]) -> int | None:
        """Write the spec there and start the soak detached; its pid when known (None
        under systemd-run: the soak writes its own into its state)."""
        self.transport.run(["mkdir", "-p", f"{self.directory}/windows"],
                           timeout=30).check(STAGE)
        with tempfile.TemporaryDirectory(prefix="gate-soak-") as tmp:
            local = Path(tmp) / "spec.json"
            local.write_text(json.dumps(spec, separators=(",", ":")))
            self.transport.put(local, f"{self.directory}/spec.json")
        argv = self._command("soak-start")
        res = self.transport.run(argv, timeout=60).check(STAGE)
        answer = self._json(res.stdout, argv)
        pid = answer.get("pid")
        return pid if isinstance(pid, int) else None

    def pull(self, after: int) -> SoakPull:
        """The soak's state and the windows written after index `after` (-1: all)."""
        argv = [*self._command("soak-pull"), "--after", str(after)]
        sent = self.clock()
        res = self.transport.run(argv, timeout=120).check(STAGE)
        back = self.clock()
        doc = self._json(res.stdout, argv)
        now = doc.get("now")
        if isinstance(now, (int, float)) and back - sent < self.rtt:
            self.rtt = back - sent
            offset = float(now) - (sent + back) / 2
            self.offset = offset if abs(offset) > self.rtt else 0.0
        state = doc.get("state")
        if isinstance(state, dict):
            state = self.on_gate_clock(state)
        windows = doc.get("windows")
        if not isinstance(windows, list) or not all(isinstance(w, dict) for w in windows):
            raise ParseError(f"the soak's pull answered no window list: {res.stdout[:200]!r}",
                             host=self.host, command=shlex.join(argv), stage=STAGE)
        return SoakPull(state=state if isinstance(state, dict) else None,
                        alive=bool(doc.get("alive")), windows=windows,
                        more=bool(doc.get("more")), log=str(doc.get("log") or ""))

    def on_gate_clock(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The soak's epoch times moved onto the gate's clock (0.0: not started yet)."""
        out = dict(state)
        for key in ("started_at", "updated_at"):
            value = out.get(key)
            if isinstance(value, (int, float)) and value:
                out[key] = float(value) - self.offset
        return out

    def stop(self, why: str, kill_after: float | None = None) -> dict[str, Any]:
        """Ask the soak to stop (it writes its whole windows first); with `kill_after`,
        TERM it now and KILL it after that many seconds. The agent's answer: pid,
        was_alive, alive, status, windows_written, log."""
        args = [*self._command("soak-stop"), "--why", why[:500]]
        if kill_after is not None:
            args += ["--kill-after", f"{kill_after:g}"]
        res = self.transport.run(args, timeout=(kill_after or 0) + 60).check(STAGE)
        return self._json(res.stdout, args)

    def clean(self, stored: int) -> dict[str, Any]:
        """Remove this soak's spool there, unless its soak runs or it holds a window after
        `stored` (the last index the gate stored: a resume needs the rest). The agent's
        answer: removed (names), kept (name -> why)."""
        argv = [*self._command("soak-clean"), "--stored", str(stored)]
        return self._json(self.transport.run(argv, timeout=120).check(STAGE).stdout, argv)

    def sweep(self, older_than_days: float) -> dict[str, Any]:
        """Remove every ended soak's spool beside this one (under ROOT) not written for
        that many days (a viewer that never came back); a running soak's is never touched."""
        root = str(PurePosixPath(self.directory).parent)
        argv = [*self.agent, "soak-clean", "--root", root, "--older-than",
                f"{older_than_days:g}"]
        return self._json(self.transport.run(argv, timeout=300).check(STAGE).stdout, argv)

    def _json(self, stdout: str, argv: Sequence[str]) -> dict[str, Any]:
        lines = stdout.strip().splitlines()
        try:
            doc = json.loads(lines[-1]) if lines else None
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise MeasurementError(f"the load agent answered no JSON: {stdout[-300:]!r}",
                                   host=self.host, command=shlex.join(argv), stage=STAGE)
        return doc
