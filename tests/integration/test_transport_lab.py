"""The SSH lab itself: the jump topology isolates its target, spawn runs inside a host,
and a lab left behind by a killed run is reaped by the next one."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab import netlab
from tests.lab.netlab import Lab

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]


def _connects(address: str) -> bool:
    try:
        socket.create_connection((address, 22), timeout=1).close()
    except OSError:
        return False
    return True


def test_target_behind_the_jump_is_reachable_only_through_it(ssh_lab: Lab) -> None:
    assert _connects(ssh_lab.host("h1").address)
    assert not _connects(ssh_lab.host("t1").address)
    target = ssh_lab.host("t1").address
    probe = ssh_lab.exec("jump", [sys.executable, "-c", "import socket; socket."
                                  f"create_connection(('{target}', 22), timeout=2).close()"])
    assert probe.returncode == 0, probe.stderr
    inv = ssh_lab.load_inventory()
    assert inv.host("t1").jump == f"{ssh_lab.user}@{ssh_lab.host('jump').address}"
    assert inv.groups["gpu"] == ("h1", "t1")


def test_spawn_runs_a_server_on_the_hosts_address(ssh_lab: Lab, tmp_path: Path) -> None:
    (tmp_path / "health").write_text("ok\n")
    address = ssh_lab.host("h2").address
    proc = ssh_lab.spawn("h2", [sys.executable, "-m", "http.server", "--bind", address,
                                "--directory", str(tmp_path), "8300"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with ssh_lab.transport("h1") as t:
            for _ in range(100):
                got = t.run(["python3", "-c", "import urllib.request,sys; sys.stdout.write("
                             f"urllib.request.urlopen('http://{address}:8300/health').read()"
                             ".decode())"])
                if got.ok:
                    break
                time.sleep(0.1)
        assert got.stdout == "ok\n"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_killed_run_leaves_a_lab_the_next_one_reaps(lab_available: None) -> None:
    script = (f"import sys, time; sys.path.insert(0, {str(REPO)!r})\n"
              "from tests.lab import netlab\n"
              "lab = netlab.Lab(hosts=('h1',)); lab.start()\n"
              "print(lab.lab_id, flush=True); time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lab_id = proc.stdout.readline().strip()
    record = netlab.STATE_DIR / f"{lab_id}.json"
    state = json.loads(record.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert lab_id in netlab.reap_stale()
    assert not record.exists() and not Path(state["root"]).exists()
    assert f"gl{lab_id}-h1" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                  text=True).stdout
    assert subprocess.run(["id", state["user"]], capture_output=True).returncode != 0
    assert not Path(f"/etc/sudoers.d/gate-lab-{lab_id}").exists()
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert f"{netlab.BACK}.{state['subnet']}.0/24" not in routes
