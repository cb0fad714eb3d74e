"""Simulated hardware on real hosts: over a real sshd (and through a jump host) the
hardware tools answer from captures while everything else runs on the host itself;
`gate hosts check` shows which hosts are simulated."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gate_testing import MINIMAL_CONFIG

from harness.config.inventory import load_inventory
from harness.sim.hosts import PACKAGED
from harness.transport import TransportPool
from tests.lab.netlab import Lab

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab
TEST_CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "simhosts"


def _inventory(lab: Lab, path: Path) -> Path:
    return lab.write_inventory(path, extra={
        "h1": {"gate_sim_hardware": "gpu-a100"},
        "h2": {"gate_sim_hardware": "lab-storage-nvme", "gate_sim_captures": str(TEST_CAPTURES)},
        "t1": {"gate_sim_hardware": "lab-gpu-h100", "gate_sim_captures": str(TEST_CAPTURES)},
    })


def test_hardware_answers_from_captures_the_rest_from_the_host(ssh_lab: Lab,
                                                                tmp_path: Path) -> None:
    inv = load_inventory(_inventory(ssh_lab, tmp_path / "hosts.ini"))
    seen: list[str] = []
    with TransportPool(inv, known_hosts=ssh_lab.known_hosts, connect_timeout=5,
                       on_simulated=lambda: seen.append("x")) as pool:
        smi = pool.run_all(["h1", "t1", "jump"], ["nvidia-smi", "-q", "-x"])
        h1 = smi["h1"]
        assert not isinstance(h1, Exception) and h1.simulated and h1.ok
        assert h1.stdout == (PACKAGED / h1.capture).read_text(encoding="utf-8")
        t1 = smi["t1"]  # behind the jump host; its profile has topo, not -q -x
        assert not isinstance(t1, Exception) and t1.simulated and t1.rc == 127
        assert "nvidia-smi topo -m" in t1.stderr
        real = smi["jump"]  # no profile: the real host, which has no nvidia-smi
        assert not isinstance(real, Exception) and not real.simulated and real.rc == 127
        topo = pool.get("t1").run(["nvidia-smi", "topo", "-m"])
        assert topo.simulated and "GPU0" in topo.stdout and "NV18" in topo.stdout
        nvme = pool.get("h2").run(["nvme", "list", "-o", "json"], sudo=True)
        assert nvme.simulated and json.loads(nvme.stdout)["Devices"]
        # Everything else goes to the host over SSH, as the lab user.
        for name in ("h1", "h2", "t1"):
            who = pool.get(name).run(["id", "-un"])
            assert who.stdout.strip() == ssh_lab.user and not who.simulated
        addresses = pool.get("t1").run(["ip", "-o", "-4", "addr", "show"]).stdout
        assert ssh_lab.host("t1").address in addresses  # it ran inside t1's namespace
        assert ssh_lab.host("h1").address not in addresses
    assert len(seen) == 4


def test_hosts_check_shows_simulated_hardware(ssh_lab: Lab, tmp_path: Path) -> None:
    (tmp_path / "gate.yaml").write_text(MINIMAL_CONFIG)
    _inventory(ssh_lab, tmp_path / "hosts.ini")
    (tmp_path / "known_hosts").write_text(ssh_lab.known_hosts.read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("GATE_CONFIG",)}
    env["GATE_SUDO_PASSWORD"] = ssh_lab.password

    def gate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", "hosts", "check", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=180)

    out = gate("--json")
    assert out.returncode == 0, out.stdout + out.stderr
    hardware = {h["name"]: h["hardware"] for h in json.loads(out.stdout)["hosts"]}
    assert hardware == {"h1": "simulated (gpu-a100)", "h2": "simulated (lab-storage-nvme)",
                        "jump": "real", "t1": "simulated (lab-gpu-h100)"}
    table = gate("-l", "h1", "-l", "jump")
    assert table.returncode == 0 and "hardware" in table.stdout
    assert "simulated (gpu-a100)" in table.stdout


def test_facts_playbook_probes_simulated_hosts_through_the_shim(ssh_lab: Lab,
                                                                 tmp_path: Path) -> None:
    from harness.ansible import run_playbook

    (tmp_path / "own-captures").symlink_to(TEST_CAPTURES)  # relative to the inventory
    inventory = ssh_lab.write_inventory(tmp_path / "hosts.ini", extra={
        "h1": {"gate_sim_hardware": "gpu-a100"},
        "t1": {"gate_sim_hardware": "lab-gpu-h100", "gate_sim_captures": "own-captures"}})
    # become: the shim needs a Python with the harness that the probing user can run (the
    # lab user cannot reach this venv's interpreter under /root; root can).
    result = run_playbook("facts.yml", inventory=inventory, known_hosts=ssh_lab.known_hosts,
                          limit="h1,t1,jump", extravars={"facts_become": True},
                          artifact_dir=tmp_path / "art", become_password=ssh_lab.password)

    def sha(directory: Path, name: str) -> str:
        return hashlib.sha256((directory / name).read_bytes()).hexdigest()

    h1 = result.facts["h1"]["gate_probes"]
    assert h1["nvidia-smi-q-x"]["sha256"] == sha(
        PACKAGED, "nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml")
    assert h1["lspci-vvv"]["sha256"] == sha(
        PACKAGED, "lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt")
    # No capture: absent, like a tool that is not installed; and never the real lsblk.
    assert not h1["lsblk"]["present"] and not h1["nvme-list"]["present"]
    t1 = result.facts["t1"]["gate_probes"]
    assert t1["ibstat"]["sha256"] == sha(
        TEST_CAPTURES, "ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt")
    assert t1["gdscheck"]["sha256"] == sha(TEST_CAPTURES, "gdscheck-p_blog_8xH100_gds1.13.txt")
    jump = result.facts["jump"]["gate_probes"]
    assert jump["lsblk"]["present"] and not jump["nvidia-smi-q-x"]["present"]  # real host
    manifests = {h: json.loads((tmp_path / "art" / "facts" / h / "manifest.json").read_text())
                 for h in ("h1", "t1", "jump")}
    assert {h: m["simulated_hardware"] for h, m in manifests.items()} == {
        "h1": "gpu-a100", "t1": "lab-gpu-h100", "jump": None}
