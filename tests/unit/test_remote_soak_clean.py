"""`gate-agent soak-clean` (harness/remote/soak_agent.py) as the gate runs it (RemoteSoak
over a LocalTransport, the real agent as a process, real spool directories): a spool goes
only once its soak has ended and every window it wrote is stored; a running soak's spool,
or one with a window the gate has not stored, stays (a resume needs it); the sweep at a
soak's start removes ended spools not written for N days, and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.loadgen import soak_spool
from harness.loadgen.records import Endpoint, RequestSpec
from harness.remote.soak_client import RemoteSoak
from harness.transport.local import LocalTransport

AGENT = [sys.executable, "-m", "harness.remote.agent"]
DAY = 86400.0


def _spec_only(root: Path) -> soak_spool.Spool:
    """A spool as the gate writes it before the soak starts: its spec, no state."""
    spool = soak_spool.Spool(root)
    spool.create(soak_spool.SoakSpec(endpoints=(Endpoint("http://127.0.0.1:9", "m", 0),),
                                     documents=(RequestSpec("doc", 8, 0),), concurrency=1,
                                     duration_s=10, window_s=1))
    return spool


def _spool(root: Path, windows: int, status: soak_spool.Status = "done", pid: int = 1) -> Path:
    spool = _spec_only(root)
    spool.set_state(soak_spool.SoakState(status=status, pid=pid, started_at=5000.0,
                                         updated_at=5001.0, windows_written=windows))
    for k in range(windows):
        spool.write_window(k, {"index": k, "requests": 10})
    return root


def _age(root: Path, days: float) -> None:
    """Every file and directory of the spool last written `days` ago."""
    when = time.time() - days * DAY
    for path in [*root.rglob("*"), root]:
        os.utime(path, (when, when))


@pytest.fixture
def soak_process(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A real process that is this spool's soak as the agent tells one (its command line
    names the agent, soak-run and the directory), in a spool whose state says it runs."""
    root = tmp_path / "soaks" / "run1-live"
    root.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                             "harness.remote.agent", "soak-run", "--dir", str(root)])
    try:
        yield _spool(root, 2, status="running", pid=proc.pid), proc.pid
    finally:
        proc.kill()
        proc.wait()


def _remote(root: Path) -> RemoteSoak:
    return RemoteSoak(LocalTransport("c1"), AGENT, str(root))


def test_a_spool_goes_once_every_window_it_wrote_is_stored(tmp_path: Path) -> None:
    root = _spool(tmp_path / "soaks" / "run1-a", 4)
    kept = _remote(root).clean(2)  # window 3 is not stored yet: a resume needs it
    assert kept == {"removed": [], "kept": {"run1-a": "1 window(s) after 2 not stored yet"}}
    assert (root / "windows" / "000003.json").is_file()
    assert _remote(root).clean(3) == {"removed": ["run1-a"], "kept": {}}
    assert not root.exists()
    assert _remote(root).clean(3)["kept"] == {"run1-a": "no such spool"}  # asked twice


def test_a_dead_soaks_spool_goes_too_once_its_windows_are_stored(tmp_path: Path) -> None:
    """State `running` but its process gone (killed): ERROR with its windows kept in the
    store, so the spool there is not needed."""
    root = _spool(tmp_path / "soaks" / "run2-dead", 3, status="running", pid=1)
    assert _remote(root).clean(2)["removed"] == ["run2-dead"]


def test_a_running_soaks_spool_is_never_removed(
        soak_process: tuple[Path, int]) -> None:
    root, _ = soak_process
    assert _remote(root).clean(99)["kept"] == {"run1-live": "its soak is running"}
    assert _remote(root).sweep(0)["kept"] == {"run1-live": "its soak is running"}
    assert (root / "spec.json").is_file()


def test_the_sweep_removes_only_ended_spools_not_written_for_n_days(
        tmp_path: Path, soak_process: tuple[Path, int]) -> None:
    live, _ = soak_process
    soaks = live.parent
    old = _spool(soaks / "run1-old", 2)
    _age(old, 20)
    recent = _spool(soaks / "run2-recent", 2)
    _age(recent, 3)
    never = soaks / "run3-never-started"  # a spec, no state: its start failed long ago
    _spec_only(never)
    _age(never, 30)
    other = soaks / "notes"  # not a spool: not the agent's to remove
    other.mkdir()
    _age(other, 30)
    _age(live, 30)
    answer = _remote(live).sweep(14)
    assert sorted(answer["removed"]) == ["run1-old", "run3-never-started"]
    assert answer["kept"] == {"run1-live": "its soak is running",
                              "run2-recent": "written recently"}
    assert sorted(p.name for p in soaks.iterdir()) == ["notes", "run1-live", "run2-recent"]


def test_a_spool_whose_soak_never_ran_keeps_its_log_until_the_sweep(tmp_path: Path) -> None:
    root = tmp_path / "soaks" / "run4-failed-start"
    _spec_only(root)
    (root / "agent.log").write_text("Traceback ...\n")
    assert _remote(root).clean(-1)["kept"] == {
        "run4-failed-start": "no state: the soak never ran (its log stays for a look)"}


def test_soak_clean_refuses_a_half_asked_command(tmp_path: Path) -> None:
    res = LocalTransport("c1").run([*AGENT, "soak-clean", "--dir", str(tmp_path)])
    assert res.rc == 4 and "--stored" in res.stderr
    res = LocalTransport("c1").run([*AGENT, "soak-clean", "--root", str(tmp_path)])
    assert res.rc == 4 and "--older-than" in res.stderr
