"""Load phases a dead gate left on the client host: found, stopped, read to the end.

A gate killed mid-phase (kill -9, OOM, a reboot of the gate host) leaves its detached
agent phase sending load to an engine. Before `gate resume RUN` measures anything again
and before `gate runs abort RUN` closes the run, every phase directory of the run
(`~/.gate/phases/runN/*`) whose benchmark row is not finished is handled here:

1. stopped (`gate-agent stop`: TERM to its process group, KILL after `wait` s), so no
   load of the dead run reaches an engine when the next measurement starts;
2. read to its end (`RemoteExecutor.drain`): every whole record the store does not hold
   yet goes into the phase's benchmark row (found by the directory's label, `benchN-`),
   each idx once; the row is then INTERRUPTED (kept, out of every count);
3. recorded: one event naming the host, pid, phase dir, how it ended (stopped now, had
   finished, or had died, with agent.log's last lines) and how many records came back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import InfrastructureError
from harness.loadgen.records import RequestRecord
from harness.loadgen.storage import benchmark_of
from harness.remote.executor import RemoteExecutor
from harness.store import Store, writer
from harness.store import runs as store_runs

DONE = ("FINISHED", "SUPERSEDED")  # rows whose phase was read to its end before
EVENT_STATUS = {"finished": "ok", "died": "failed", "error": "failed"}  # else: stopped now


@dataclass(frozen=True)
class Leftover:
    """One phase directory the dead gate had not finished reading."""

    host: str
    phase_dir: str
    benchmark_id: int | None
    pid: int | None
    was_running: bool  # its process ran until this stopped it
    state: str  # stopped (by this) / finished / error / died / never started
    recovered: int  # records stored now (none of them stored before)
    cause: str  # why it ended, in its own words (agent.log's tail when it died)

    def line(self) -> str:
        how = ("was still sending load: stopped" if self.was_running
               else f"had ended ({self.state})")
        into = (f" into benchmark {self.benchmark_id}" if self.benchmark_id is not None
                else " (no benchmark row names it: not stored)")
        cause = f"; {self.cause}" if self.cause else ""
        return (f"load phase {self.phase_dir} on {self.host} (pid {self.pid}) {how}; "
                f"{self.recovered} records recovered{into}{cause}")


def recover(executor: RemoteExecutor, store: Store, run_id: int, *,
            wait: float = 10.0) -> list[Leftover]:
    """Stop and read every phase of run_id the store has not finished; see the module."""
    rows = writer.benchmarks(store, run_id)
    status = {b.id: b.status for b in rows}
    handled = {b.id for b in rows if "recovered_requests" in (b.summary or {})}
    found = []
    for phase_dir in executor.phase_dirs():
        bid = benchmark_of(phase_dir.rpartition("/")[2])
        if bid is not None and (status.get(bid) in DONE or bid in handled):
            continue  # read to its end while the gate lived, or by an earlier resume
        found.append(_recover_one(executor, store, run_id, phase_dir,
                                  bid if bid in status else None, wait))
    return found


def _recover_one(executor: RemoteExecutor, store: Store, run_id: int, phase_dir: str,
                 bid: int | None, wait: float) -> Leftover:
    stopped = executor.stop(phase_dir, wait)
    if stopped.get("alive"):
        raise InfrastructureError(
            f"the load phase {phase_dir} (pid {stopped.get('pid')}) still runs after TERM "
            f"and KILL: nothing is measured while a dead run's load may reach an engine",
            host=executor.host, stage="left-over load phase",
            hint="stop that process on the client host, then run the command again")
    n = 0
    if bid is not None:
        def keep(batch: Sequence[RequestRecord]) -> None:
            writer.insert_requests(store, bid, [r.to_row() for r in batch])

        n = executor.drain(phase_dir, writer.stored_idx(store, bid), keep)
    was_running = bool(stopped.get("was_alive"))
    state = str(stopped.get("state") or "never started")
    if state in ("starting", "running") and not was_running:
        state = "died"  # gone without a last word: killed, OOM, the host rebooted
    cause = {"error": str(stopped.get("error") or ""),
             "died": f"its log ends: {stopped.get('log') or '(empty)'}"}.get(state, "")
    left = Leftover(host=executor.host, phase_dir=phase_dir, benchmark_id=bid,
                    pid=stopped.get("pid"), was_running=was_running,
                    state=state, recovered=n, cause=cause)
    if bid is not None:
        writer.interrupt_benchmark(store, bid, {"interrupted": left.line(),
                                                "recovered_requests": n})
    store_runs.add_event(store, run_id, source="harness", name="load phase left running",
                         host=left.host, status=EVENT_STATUS.get(state, "changed"),
                         message=left.line())
    return left
