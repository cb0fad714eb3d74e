"""The soak's agent commands as the gate reads them (harness/remote/soak_agent.py,
soak_client.py): the real agent run as a process through a LocalTransport on a real spool
directory. A pull carries the windows after the last one stored and never a half-written
file, the same window pulled twice is the same window, the soak's clock is moved onto the
gate's, and a stop request reaches the soak's spool with its reason."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from harness.loadgen import soak_spool
from harness.loadgen.records import Endpoint, RequestSpec
from harness.remote import soak_agent
from harness.remote.soak_client import RemoteSoak
from harness.transport.local import LocalTransport

AGENT = [sys.executable, "-m", "harness.remote.agent"]
SKEW = 1000.0  # the client host's clock ahead of the gate's


def _spool(root: Path, windows: int) -> soak_spool.Spool:
    spool = soak_spool.Spool(root)
    spool.create(soak_spool.SoakSpec(endpoints=(Endpoint("http://127.0.0.1:9", "m", 0),),
                                     documents=(RequestSpec("doc", 8, 0),), concurrency=1,
                                     duration_s=10, window_s=1))
    spool.set_state(soak_spool.SoakState(status="running", pid=1, started_at=5000.0,
                                         updated_at=5001.0, windows_written=windows))
    for k in range(windows):
        spool.write_window(k, {"index": k, "requests": 10 + k})
    return spool


def _remote(root: Path) -> RemoteSoak:
    return RemoteSoak(LocalTransport("c1"), AGENT, str(root),
                      clock=lambda: time.time() - SKEW)


def test_the_agent_reads_the_spool_the_soak_writes() -> None:
    """soak_agent repeats the spool's layout (it may not import numpy for a pull)."""
    assert (soak_agent.SPEC, soak_agent.STATE, soak_agent.STOP, soak_agent.WINDOWS) == \
        (soak_spool.SPEC, soak_spool.STATE, soak_spool.STOP, soak_spool.WINDOWS)
    assert set(soak_agent.ENDED) == set(soak_spool.ENDED)
    assert soak_spool.window_name(42) == "000042.json"


def test_a_pull_carries_the_windows_after_the_last_stored_and_no_half_file(
        tmp_path: Path) -> None:
    _spool(tmp_path, 4)
    (tmp_path / "windows" / ".000004.json.99.tmp").write_text('{"index": 4, "requ')
    remote = _remote(tmp_path)
    got = remote.pull(1)
    assert [w["index"] for w in got.windows] == [2, 3] and not got.more
    assert [w["index"] for w in remote.pull(1).windows] == [2, 3]  # the same, once more
    assert remote.pull(3).windows == []
    assert [w["index"] for w in remote.pull(-1).windows] == [0, 1, 2, 3]
    # pid 1 is not this spool's soak: not alive, whatever runs under that pid
    assert got.state is not None and got.state["status"] == "running" and not got.alive
    # the soak's start on the gate's clock: the host's clock is SKEW ahead
    assert abs(got.state["started_at"] - (5000.0 - SKEW)) < 1.0
    assert abs(remote.offset - SKEW) < 1.0


def test_a_long_backlog_comes_in_pulls_that_say_more_is_there(tmp_path: Path) -> None:
    _spool(tmp_path, 5)
    res = LocalTransport("c1").run([*AGENT, "soak-pull", "--dir", str(tmp_path), "--after",
                                    "-1", "--limit", "2"])
    answer = json.loads(res.check("soak-pull").stdout)
    assert [w["index"] for w in answer["windows"]] == [0, 1] and answer["more"] is True


def test_a_stop_request_reaches_the_soaks_spool_with_its_reason(tmp_path: Path) -> None:
    spool = _spool(tmp_path, 1)
    answer = _remote(tmp_path).stop("ttft_drift: TTFT p50 drift: +40 %")
    assert answer["was_alive"] is False and answer["status"] == "running"
    assert spool.stop_requested() == "ttft_drift: TTFT p50 drift: +40 %"


def test_a_second_start_of_one_soak_is_refused(tmp_path: Path) -> None:
    _spool(tmp_path, 0)  # it has a state: a soak ran (or runs) here
    res = LocalTransport("c1").run([*AGENT, "soak-start", "--dir", str(tmp_path)])
    assert res.rc == 4 and "already holds a soak" in res.stderr
    assert not (tmp_path / "agent.log").exists()  # nothing was started


def test_a_soak_started_from_a_relative_directory_finds_its_spool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`gate demo`'s default --out is relative, and the soak runs in its spool directory:
    it was handed the relative path and failed to write its first state
    (FileNotFoundError) before any window."""
    from harness.loadgen import soak

    monkeypatch.chdir(tmp_path)
    rel = Path("site") / "g4-soak"
    rel.mkdir(parents=True)
    soak_spool.Spool(rel).create(soak_spool.SoakSpec(
        endpoints=(Endpoint("http://127.0.0.1:9", "m", 0),),
        documents=(RequestSpec("doc", 8, 0),), concurrency=1, duration_s=1, window_s=1))
    pid = soak.start(rel)
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline:
        state = soak_spool.Spool(rel).state()
        if state is not None and state.status != "starting":
            break
        time.sleep(0.2)
    log = (rel / soak.LOG).read_text()
    assert "FileNotFoundError" not in log, log
    assert state is not None and state.pid == pid, (state, log)
