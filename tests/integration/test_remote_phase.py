"""A phase run detached by the agent and pulled back: the whole path with real processes
(LocalTransport, the agent started with setsid as on a host without systemd, a real
streaming server), including the gate killed mid-phase and the agent killed mid-phase.
The same over SSH with a cut link is tests/lab/ (test_remote_lab.py)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, running_server

from harness.errors import MeasurementError
from harness.loadgen.phase import PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.remote import detach, frames, leftovers, records_file
from harness.remote.executor import RemoteExecutor
from harness.store import Store
from harness.store.runs import NewRun, start_run
from harness.store.writer import benchmarks, insert_requests, requests, start_benchmark
from harness.transport.local import LocalTransport

AGENT = (sys.executable, "-m", "harness.remote.agent")
REPO = Path(__file__).resolve().parents[2]


def spec_for(url: str, n: int, concurrency: int = 4) -> PhaseSpec:
    return PhaseSpec(endpoints=(Endpoint(url, "test-model", 0),),
                     requests=tuple(RequestSpec(f"doc {i} text", 8, i) for i in range(n)),
                     concurrency=concurrency, warmup=0)


def executor(root: Path, **extra: float) -> RemoteExecutor:
    return RemoteExecutor(LocalTransport(), AGENT, str(root), poll=0.1, **extra)


def only_phase(root: Path) -> Path:
    (phase,) = root.iterdir()
    return phase


def wait_for_lines(path: Path, n: int, timeout: float = 30.0) -> None:
    """n lines in the test's store file, or n records in an agent's record file."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and (len(records_file.read_file(path)) if path.name == frames.NAME
                              else path.read_bytes().count(b"\n")) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {n} records")


def test_a_detached_phase_comes_back_whole_with_its_health(tmp_path: Path) -> None:
    got: list[RequestRecord] = []
    # an engine-like TTFT: against a no-op server's sub-ms one, the client's own delay
    # is most of what it measures and its health says so (issue 24)
    with running_server(ServerConfig(ttft=0.05, itl=0.001)) as (url, _srv):
        outcome = executor(tmp_path / "p1").run(spec_for(url, 60), got.extend)
    assert outcome.status == "FINISHED" and len(outcome.records) == 60
    assert sorted(r.idx for r in got) == list(range(60))
    assert outcome.result.summary.completed == 60
    health = outcome.health.to_dict()  # measured by the agent, where the load ran
    assert health["sends"] > 0 and health["loop_samples"] > 0 and not health["saturated"]
    status = json.loads((only_phase(tmp_path / "p1") / "status.json").read_text())
    assert status["state"] == "finished" and status["pid"] != os.getpid()


def test_a_killed_agent_ends_the_phase_in_error_with_every_record_kept(tmp_path: Path) -> None:
    got: list[RequestRecord] = []
    with running_server(ServerConfig(itl=0.01)) as (url, _srv):
        ex = executor(tmp_path / "p2")
        phase = Path(ex.start(spec_for(url, 2000, concurrency=2)))
        wait_for_lines(phase / frames.NAME, 20)
        pid = json.loads((phase / "status.json").read_text())["pid"]
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(MeasurementError) as e:
            ex.attach(str(phase), got.extend)
    written = len(records_file.read_file(phase / frames.NAME))
    assert f"pid {pid}" in e.value.message and "gone without finishing" in e.value.message
    assert e.value.exit_code == 3 and e.value.stage == "load phase (agent)"
    assert len(got) == written >= 20 and len({r.idx for r in got}) == written


GATE_SIDE = """
import json, sys
from harness.loadgen.phase import PhaseSpec
from harness.remote.executor import RemoteExecutor
from harness.transport.local import LocalTransport
spec = PhaseSpec.from_dict(json.loads(open(sys.argv[1]).read()))
store = open(sys.argv[3], "a")
def on_batch(batch):
    store.write("".join(f"{r.idx}\\n" for r in batch)); store.flush()
RemoteExecutor(LocalTransport(), (sys.executable, "-m", "harness.remote.agent"), sys.argv[2],
               poll=0.1).run(spec, on_batch)
"""


def test_the_gate_killed_mid_phase_resumes_with_every_request_exactly_once(
        tmp_path: Path) -> None:
    """kill -9 of the gate's process: the agent goes on; attach() with what the store
    holds delivers the rest, nothing twice."""
    phase, store = tmp_path / "p3", tmp_path / "stored.txt"
    with running_server(ServerConfig(itl=0.002)) as (url, _srv):
        spec = spec_for(url, 600, concurrency=4)
        (tmp_path / "spec.json").write_text(json.dumps(spec.to_dict()))
        gate = subprocess.Popen([sys.executable, "-c", GATE_SIDE, str(tmp_path / "spec.json"),
                                 str(phase), str(store)], cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        wait_for_lines(store, 10)
        gate.kill()
        gate.wait(timeout=10)
        before = [int(x) for x in store.read_text().split()]
        assert 10 <= len(before) < 600, "the phase ended before the gate was killed"

        def keep(batch: list[RequestRecord]) -> None:
            with store.open("a") as f:
                f.write("".join(f"{r.idx}\n" for r in batch))

        outcome = executor(phase, delivered=before).attach(  # type: ignore[arg-type]
            str(only_phase(phase)), keep)
    stored = [int(x) for x in store.read_text().split()]
    assert sorted(stored) == list(range(600))
    assert outcome.status == "FINISHED" and len(outcome.records) == 600


def run_events(store: Store, run_id: int) -> list[tuple[str, str, str]]:
    """(name, status, message) of the run's events, from the database file itself."""
    with sqlite3.connect(str(store.url).removeprefix("sqlite:///")) as conn:
        return list(conn.execute("SELECT name, status, message FROM event WHERE run_id = ?",
                                 (run_id,)))


def _run_with_benchmark(tmp_path: Path) -> tuple[Store, int, int]:
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    run_id = start_run(store, NewRun(campaign="c", site="s", customer="", kind="gate",
                                     gate="G3"))
    bid = start_benchmark(store, run_id, arm="baseline", layout="TP8", tier=4,
                          repetition=0, phase="measured")
    return store, run_id, bid


def test_a_phase_the_dead_gate_left_running_is_stopped_and_read_once(tmp_path: Path) -> None:
    """What `gate resume` / `gate runs abort` do before anything else: the phase still
    sending load is stopped, every record the store lacks goes into its benchmark row
    once (what the dead gate stored stays), the row is INTERRUPTED, one event says so."""
    store, run_id, bid = _run_with_benchmark(tmp_path)
    root = tmp_path / ".gate" / "phases" / f"run{run_id}"
    ex = executor(root)
    with running_server(ServerConfig(itl=0.01)) as (url, _srv):
        phase = Path(ex.start(spec_for(url, 2000, concurrency=2), label=f"bench{bid}"))
        wait_for_lines(phase / frames.NAME, 20)
        # what the gate had stored before it was killed
        insert_requests(store, bid, [r.to_row() for r in
                                     records_file.read_file(phase / frames.NAME)[:10]])
        pid = json.loads((phase / "status.json").read_text())["pid"]
        (left,) = leftovers.recover(ex, store, run_id, wait=5)
        assert not detach.alive(pid)  # no load of the dead run goes on
    written = records_file.read_file(phase / frames.NAME)
    idx = [r["idx"] for r in requests(store, bid)]
    assert sorted(idx) == sorted(r.idx for r in written) and len(set(idx)) == len(idx)
    assert left.was_running and left.pid == pid and left.recovered == len(written) - 10
    assert left.benchmark_id == bid and left.state == "stopped"
    (row,) = benchmarks(store, run_id)
    assert row.status == "INTERRUPTED" and row.summary["recovered_requests"] == left.recovered
    events = [m for n, _, m in run_events(store, run_id) if n == "load phase left running"]
    assert len(events) == 1 and f"pid {pid}" in events[0] and phase.name in events[0]
    assert leftovers.recover(ex, store, run_id) == []  # handled once, not again


def test_a_phase_whose_agent_died_is_recorded_with_its_log(tmp_path: Path) -> None:
    store, run_id, bid = _run_with_benchmark(tmp_path)
    ex = executor(tmp_path / "phases")
    with running_server(ServerConfig(itl=0.01)) as (url, _srv):
        phase = Path(ex.start(spec_for(url, 2000, concurrency=2), label=f"bench{bid}"))
        wait_for_lines(phase / frames.NAME, 5)
        pid = json.loads((phase / "status.json").read_text())["pid"]
        os.kill(pid, signal.SIGKILL)
        while detach.alive(pid):
            time.sleep(0.05)
        (left,) = leftovers.recover(ex, store, run_id, wait=5)
    assert not left.was_running and left.state == "died" and "its log ends" in left.cause
    assert left.recovered == len(records_file.read_file(phase / frames.NAME)) >= 5
    (event,) = [(st, m) for n, st, m in run_events(store, run_id)
                if n == "load phase left running"]
    assert event[0] == "failed" and "had ended (died)" in event[1]
