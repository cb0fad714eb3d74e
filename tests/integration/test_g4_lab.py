"""G4 over SSH in the network-namespace lab: the accelerated engine inside the gpu host's
namespace (started through serve.yml), the storage host's devices read over SSH. The link
to the storage host is cut mid-soak and the gate process killed while it is down; after
the link is back, `gate resume` re-attaches: the soak never stopped, every window is
stored exactly once, the cut is an event (a read that gets no answer for 20 s fails: the
viewer does not hang on it), and the windows the gate could not sample are given the
reads of the gap, not judged as a fallen-back accelerator."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from gate_testing import GATE

from tests.integration.test_g3_lab import write_site
from tests.lab.netlab import Lab

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = [pytest.mark.lab, pytest.mark.slow]

WINDOWS = 36  # the cut must outlast a read's 20 s idle timeout (transport/ssh.py)
SHORT = {"duration": f"{WINDOWS}s", "window": "1s", "baseline": "3s", "concurrency": 4,
         # the lab's namespaces share this machine's kernel and have no GPU or NVMe
         "unverifiable": {"xid": "the lab's namespaces read this machine's kernel journal",
                          "ecc": "the lab has no GPU", "nvme": "the lab has no NVMe"}}


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="gate-g4lab-"))
    d.chmod(0o755)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def _windows_written(site: Path) -> int:
    state = site / "artifacts" / "run-1" / "g4-soak" / "state.json"
    try:
        return int(yaml.safe_load(state.read_text())["windows_written"])
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
        return 0


def _wait(site: Path, n: int, timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while _windows_written(site) < n:
        assert time.monotonic() < end, f"the soak wrote fewer than {n} windows"
        time.sleep(0.2)


def test_a_cut_storage_link_and_a_killed_viewer_lose_no_window(
        ssh_lab: Lab, tmp_path: Path, shared_dir: Path) -> None:
    path = write_site(ssh_lab, tmp_path, shared_dir, base_extra=[], acc_extra=[])
    cfg = yaml.safe_load(path.read_text())
    cfg["gates"]["g4"] = SHORT
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = {**os.environ, "GATE_DB": f"sqlite:///{tmp_path / 'gate.db'}",
           "GATE_SUDO_PASSWORD": ssh_lab.password}
    viewer = subprocess.Popen([*GATE, "run", "G4", "--force", "-c", str(path)], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        _wait(tmp_path, 3)
        ssh_lab.cut_link("h2")  # the storage host: its device counters cannot be read
        _wait(tmp_path, 28)
        viewer.send_signal(signal.SIGKILL)  # and the gate process dies meanwhile
        viewer.wait(timeout=30)
    finally:
        ssh_lab.restore_link("h2")
    resumed = subprocess.run([*GATE, "resume", "1", "-c", str(path)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode in (0, 2), resumed.stdout + resumed.stderr[-3000:]
    with sqlite3.connect(tmp_path / "gate.db") as db:
        idx = [i for (i,) in db.execute(
            "SELECT idx FROM soak_window WHERE run_id = 1 ORDER BY idx")]
        started = db.execute("SELECT COUNT(*) FROM event WHERE run_id = 1 "
                             "AND name = 'G4 soak started'").fetchone()[0]
        failed = db.execute("SELECT COUNT(*) FROM event WHERE run_id = 1 AND host = 'h2' "
                            "AND name = 'G4 device sample' AND status = 'failed'").fetchone()[0]
        checks = {nodeid.rpartition("::")[2]: outcome for nodeid, outcome in db.execute(
            'SELECT nodeid, outcome FROM "check" WHERE run_id = 1')}
    assert idx == list(range(WINDOWS))  # each window once, none missing
    assert started == 1  # the soak was never started again
    assert failed >= 1  # the cut was seen, as an event, not a stop
    # the soak ran whole; the windows the gate could not sample were given the gap's
    # reads, not judged as a fallen-back accelerator (the drifts of a 36 s soak on a
    # shared machine may go either way, and are not this test's)
    for name in ("test_soak", "test_criterion[error_rate]", "test_criterion[restarts]",
                 "test_criterion[engaged]", "test_criterion[engine_clock]",
                 "test_criterion[hardware]"):
        assert checks.get(name) == "PASS", checks
