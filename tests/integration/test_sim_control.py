"""Background engines through `python -m harness.sim.control` and `gate sim` in the
foreground: start waits for health, stop and restart, status exit codes, one-line user
errors, a clean exit on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

from harness.sim.control import read_spec

CONTROL = [sys.executable, "-m", "harness.sim.control"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CONTROL, *args], capture_output=True, text=True, timeout=60)


def test_start_status_restart_stop(tmp_path: Path) -> None:
    state = str(tmp_path / "engine")
    r = _run("start", "--state-dir", state, "--port", "0", "--external-tier", "on",
             "--tier-dir", str(tmp_path / "tier"), "--tier-reset", "--speed", "20")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("started pid ")
    pid = int(r.stdout.split()[2])
    st = _run("status", "--state-dir", state)
    assert st.returncode == 0 and f"running pid {pid}" in st.stdout
    again = _run("start", "--state-dir", state, "--port", "0")
    assert again.returncode == 4 and "already running" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    rs = _run("restart", "--state-dir", state)
    assert rs.returncode == 0, rs.stderr
    assert int(rs.stdout.split()[2]) != pid
    spec = read_spec(Path(state))
    assert spec.tier_reset is False and spec.speed == 20.0  # restart keeps the tier
    assert _run("stop", "--state-dir", state).stdout.strip() == "stopped"
    assert _run("status", "--state-dir", state).returncode == 1
    assert _run("stop", "--state-dir", state).stdout.strip() == "was not running"


def test_start_on_a_busy_port_fails_with_the_log(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _run("start", "--state-dir", str(tmp_path / "e"), "--port", str(port))
    assert r.returncode == 3
    assert "exited with code" in r.stderr and "cannot listen" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_usage_errors_are_one_line() -> None:
    r = subprocess.run([sys.executable, "-m", "harness.sim", "--speed", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "--speed" in r.stderr
    h = subprocess.run([sys.executable, "-m", "harness.sim", "--help"], capture_output=True,
                       text=True, timeout=30)
    assert h.returncode == 0
    for opt in ("--profile", "--external-tier", "--speed", "--tier-dir", "--tier-reset",
                "--diskstats", "--crash-after", "--slow-start", "--error-rate", "--host"):
        assert opt in h.stdout


def test_gate_sim_prints_its_url_and_stops_on_sigterm(tmp_path: Path) -> None:
    gate = Path(sys.executable).parent / "gate"
    proc = subprocess.Popen([str(gate), "sim", "--port", "0", "--profile", "r2-moe480b"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "SIMULATED" in line and "http://127.0.0.1:" in line
        url = line.rsplit(" ", 1)[1].strip()
        import urllib.request

        with urllib.request.urlopen(url + "/v1/models") as resp:
            card = json.loads(resp.read())["data"][0]
        assert card["gate_sim"]["tp"] == 8 and card["id"].startswith("Qwen/Qwen3-Coder")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
