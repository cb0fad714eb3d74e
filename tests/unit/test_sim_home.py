"""A simulated host's home (`gate_sim_home`, harness/sim/hardware_transport.py): its
commands start there and its relative paths land there, as an SSH login's do, so the load
agent's ~/.gate/... of the demo's client host stays in the demo's directory; its hardware
tools are still answered from the captures. Real commands on this machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sim.hardware_transport import SIM_HOME_VAR, SimulatedHardwareTransport, wrap
from harness.transport.backends import BackendHost
from harness.transport.local import LocalTransport


def _client(inventory_dir: Path, home: str | None) -> SimulatedHardwareTransport:
    host_vars = {"gate_sim_hardware": "client", **({SIM_HOME_VAR: home} if home else {})}
    return wrap(BackendHost("loadgen-sim", host_vars, inventory_dir, None),
                LocalTransport("loadgen-sim"))


def test_commands_start_in_the_hosts_home_and_relative_paths_land_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "gate-cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the gate's working directory: never written into
    host = _client(tmp_path, "client-home")
    home = tmp_path / "client-home"
    assert host.run(["pwd"]).check("pwd").stdout.strip() == str(home)
    shell = host.run_shell("mkdir -p .gate/agent && pwd")
    assert shell.check("sh").stdout.strip() == str(home)
    src = tmp_path / "wheel.txt"
    src.write_text("w")
    host.put(src, ".gate/agent/wheel.txt")
    assert (home / ".gate" / "agent" / "wheel.txt").read_text() == "w"
    assert host.read_file(".gate/agent/wheel.txt") == b"w"
    assert host.read_file(str(src)) == b"w"  # an absolute path is left alone
    assert list(elsewhere.iterdir()) == []
    answered = host.run(["ethtool", "eth0"])
    assert answered.simulated and answered.rc == 0  # hardware: still from the capture


def test_without_a_home_commands_start_where_they_always_did(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    host = _client(tmp_path, None)
    assert host.run(["pwd"]).check("pwd").stdout.strip() == str(tmp_path)
