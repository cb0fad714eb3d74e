"""RemoteExecutor: a load phase run by the agent on the client host, pulled back here.

Beside InProcessExecutor behind the same seam (harness.loadgen.phase): G3 hands it a
PhaseSpec and an on_batch, and gets a PhaseOutcome. The phase runs detached there
(harness.remote.detach); this side only pulls: every `poll` seconds one command returns
the phase's status and the record file's whole frames from the last offset read. So:

- pulling the same bytes twice delivers nothing twice (`Puller` skips every idx it has
  delivered, and those the caller stored before a resume: `delivered=`);
- an SSH drop loses nothing: the agent keeps appending; pulls retry for `reconnect_for`
  seconds and go on from the same offset;
- the gate process may die: `attach()` (gate resume) reads the file again from the start
  and delivers only what was not stored;
- a dead agent (killed, OOM, reboot) ends the phase as a MeasurementError naming the host,
  the pid and its log's last lines, after every record it wrote was delivered;
- a phase the dead gate left running is found by its directory (named by the caller's
  `label`), stopped (`stop`) and read to its end (`drain`): harness.remote.leftovers.
"""

from __future__ import annotations

import binascii
import json
import tempfile
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import CommandTimeoutError, MeasurementError, ParseError, UnreachableError
from harness.loadgen.engine import OnBatch
from harness.loadgen.phase import PhaseOutcome, PhaseSpec
from harness.loadgen.records import RequestRecord
from harness.remote import frames, records_file
from harness.transport.base import Transport

STAGE = "load phase (agent)"


@dataclass
class Puller:
    """Offset and delivered idx of one phase's record file; pure, so tests feed it bytes."""

    delivered: set[int] = field(default_factory=set)
    offset: int = 0
    records: dict[int, RequestRecord] = field(default_factory=dict)  # idx -> record

    def take(self, data: bytes) -> list[RequestRecord]:
        """Decode the whole frames of data (read from self.offset); keep every record
        for the outcome (stored before a resume or not) and return, in file order, those
        not delivered before."""
        recs, used = records_file.decode(data, at_start=self.offset == 0)
        self.offset += used
        idxs = [r.idx for r in recs]
        if self.delivered.isdisjoint(idxs) and len(set(idxs)) == len(idxs):
            # the usual pull: all new (what `records` holds was delivered already)
            self.delivered.update(idxs)
            self.records.update(zip(idxs, recs, strict=True))
            return recs
        fresh = []
        for r in recs:
            self.records.setdefault(r.idx, r)
            if r.idx not in self.delivered:
                self.delivered.add(r.idx)
                fresh.append(r)
        return fresh


@dataclass(frozen=True)
class Pulled:
    status: dict[str, Any] | None
    alive: bool
    size: int
    log: str
    data: bytes


def parse_pull(stdout: str) -> Pulled:
    head, _, rest = stdout.partition("\n")
    h = json.loads(head)
    if h.get("format") != frames.VERSION:
        raise ParseError(f"the load agent answers with record format {h.get('format', 1)}; "
                         f"this gate reads {frames.VERSION}. Ship this gate's agent (it "
                         f"reinstalls on a version change) and run the phase again",
                         stage=STAGE)
    # whole base64 quanta: an answer cut short (a link dropped mid-pull) gives a prefix of
    # the frames; the torn one is read again by the next pull
    whole = rest[:len(rest) - len(rest) % 4]
    return Pulled(status=h.get("status"), alive=bool(h.get("alive")), size=int(h["size"]),
                  log=str(h.get("log") or ""), data=binascii.a2b_base64(whole))


@dataclass
class RemoteExecutor:
    """Runs phases with `agent` (the argv that starts gate-agent there) on the host behind
    `transport`, each in its own directory under `phase_root` there."""

    transport: Transport
    agent: Sequence[str]
    phase_root: str
    poll: float = 1.0
    reconnect_for: float = 600.0
    start_grace: float = 60.0  # a phase that has not written its status by then is dead
    pull_limit: int = 32 << 20
    delivered: Collection[int] = ()
    sleep: Callable[[float], None] = time.sleep
    # The gate-side check of the installed agent (harness.remote.verify.AgentGuard.check),
    # before each phase starts and after it ends: raises, so nothing is measured on an
    # agent that changed. None: an agent the caller runs from its own tree (tests).
    verify: Callable[[], None] | None = None

    @property
    def host(self) -> str:
        return str(getattr(self.transport, "host", "client"))

    def run(self, spec: PhaseSpec, on_batch: OnBatch | None = None, *,
            label: str = "") -> PhaseOutcome:
        outcome = self.attach(self.start(spec, label), on_batch)
        if self.verify is not None:  # the agent that pulled the records is the one shipped
            self.verify()
        return outcome

    def start(self, spec: PhaseSpec, label: str = "") -> str:
        """Start the phase detached; returns its directory there (for attach / resume),
        named `LABEL-TIME-ID` so a gate that died can tell whose phase it was. The agent
        is verified first (`verify`)."""
        if self.verify is not None:
            self.verify()
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        phase_dir = f"{self.phase_root}/{label}-{name}" if label else f"{self.phase_root}/{name}"
        self.transport.run(["mkdir", "-p", phase_dir], timeout=30).check(STAGE)
        with tempfile.TemporaryDirectory(prefix="gate-spec-") as tmp:
            local = Path(tmp) / "spec.json"
            local.write_text(json.dumps(spec.to_dict()))
            self.transport.put(local, f"{phase_dir}/spec.json")
        self.transport.run([*self.agent, "start", "--spec", f"{phase_dir}/spec.json",
                            "--dir", phase_dir], timeout=60).check(STAGE)
        return phase_dir

    def phase_dirs(self) -> list[str]:
        """Every phase directory under phase_root there (none when it does not exist)."""
        res = self.transport.run(["find", self.phase_root, "-mindepth", "1", "-maxdepth",
                                  "1", "-type", "d"], timeout=60)
        if not res.ok and "No such file" in res.stderr:
            return []
        return sorted(res.check(STAGE).stdout.split())

    def stop(self, phase_dir: str, wait: float = 10.0) -> dict[str, Any]:
        """End the phase if its process still runs (`gate-agent stop`): pid, was_alive,
        alive, state, error, log."""
        res = self.transport.run([*self.agent, "stop", "--dir", phase_dir, "--wait",
                                  f"{wait:g}"], timeout=wait + 60)
        answer: dict[str, Any] = json.loads(res.check(STAGE).stdout.strip().splitlines()[-1])
        return answer

    def drain(self, phase_dir: str, delivered: Collection[int],
              on_batch: OnBatch) -> int:
        """Read a phase that no longer runs to its end: every whole record not in
        `delivered` goes to on_batch once. Returns how many did."""
        puller = Puller(delivered=set(delivered))
        n = 0
        while True:
            before = puller.offset
            got = self._pull(phase_dir, before)
            fresh = puller.take(got.data)
            if fresh:
                on_batch(fresh)
                n += len(fresh)
            if puller.offset == before or got.size - puller.offset < frames.FRAME.size:
                return n  # the rest, if any, is a batch torn when the agent died

    def _pull(self, phase_dir: str, offset: int) -> Pulled:
        res = self.transport.run([*self.agent, "pull", "--dir", phase_dir, "--offset",
                                  str(offset), "--limit", str(self.pull_limit)], timeout=120)
        return parse_pull(res.check(STAGE).stdout)

    def attach(self, phase_dir: str, on_batch: OnBatch | None = None) -> PhaseOutcome:
        """Follow the phase in phase_dir to its end (also after the gate itself was
        restarted: `delivered` then holds what the store already has)."""
        puller = Puller(delivered=set(self.delivered))
        began = last_ok = time.monotonic()
        gone = 0  # pulls in a row that found the phase's process gone
        # 50 ms, doubling up to `poll`: a short phase (G3's are seconds) is seen ending at
        # once, a long one costs the client host one pull a `poll`
        wait = min(0.05, self.poll)
        while True:
            try:
                got = self._pull(phase_dir, puller.offset)
            except (UnreachableError, CommandTimeoutError):
                # the link, not the agent: it keeps appending; a pull that ran and
                # failed (CommandFailedError) is raised at once
                if time.monotonic() - last_ok > self.reconnect_for:
                    raise
                self.sleep(self.poll)
                continue
            last_ok = time.monotonic()
            before = puller.offset
            fresh = puller.take(got.data)
            if fresh and on_batch is not None:
                on_batch(fresh)
            if puller.offset > before and got.size - puller.offset >= frames.FRAME.size:
                continue  # more is there already (the pull stopped at its limit)
            state = (got.status or {}).get("state")
            if state == "finished" and puller.offset >= got.size:
                return self._outcome(got.status or {}, puller)
            if state == "error" and puller.offset >= got.size:
                raise MeasurementError(
                    f"the load agent stopped with an error after {len(puller.records)} "
                    f"requests: {(got.status or {}).get('error')}", host=self.host,
                    stage=STAGE)
            started = state in ("starting", "running") or (
                state is None and time.monotonic() - began > self.start_grace)
            # twice in a row: the phase may have ended between reading status and pid
            gone = gone + 1 if started and not got.alive else 0
            if gone >= 2 and not got.data:  # nothing more will come
                pid = (got.status or {}).get("pid")
                torn = got.size - puller.offset
                raise MeasurementError(
                    f"the load agent (pid {pid}) is gone without finishing; "
                    f"{len(puller.records)} requests kept"
                    f"{f' ({torn} bytes of a batch it was writing lost)' if torn else ''}; "
                    f"its log ends: {got.log or '(empty)'}", host=self.host, stage=STAGE)
            self.sleep(wait if gone == 0 else min(wait, 0.2))
            wait = min(wait * 2, self.poll)

    @staticmethod
    def _outcome(status: dict[str, Any], puller: Puller) -> PhaseOutcome:
        done = [puller.records[k] for k in sorted(puller.records)]
        return PhaseOutcome.from_dict(status["outcome"], records=done)
