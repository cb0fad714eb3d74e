"""G1 end to end on the namespace lab: real sshds, hosts whose hardware tools answer from
captures (the rest, dmesg and uname included, runs on the host), one host whose link is cut.

A BOM mismatch is a STOP-LOSS naming host, item, expected and found; an unreachable host
is ERROR for that host's checks only, never a STOP-LOSS; every raw output is an artifact
with its sha256 and every serial a host fact."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.store import Store
from harness.store.queries import run_tables
from tests.lab.netlab import LabFactory

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab
TEST_CAPTURES = Path(__file__).resolve().parents[1] / "fixtures" / "simhosts"

CONFIG = """\
site: {{name: lab-site}}
campaign: {{name: g1-lab}}
inventory: hosts.ini
known_hosts: known_hosts
model: {{name: test/model}}
simulated: true
gates:
  g1:
    bom:
      gpu:
        gpu: {{model: A100-SXM4-80GB, count: 1, min_driver: "535"}}
        os: {{os: "{os_name}"}}
      storage:
        nvme: {{model: FireCuda 530, count: 3, min_capacity_gb: 4000{firmware}}}
"""


def _os_name() -> str:
    text = Path("/etc/os-release").read_text()
    return next(line.split("=", 1)[1].strip().strip('"') for line in text.splitlines()
                if line.startswith("PRETTY_NAME="))


def test_g1_mismatch_is_stop_loss_and_a_cut_host_is_error(lab_factory: LabFactory,
                                                           tmp_path: Path) -> None:
    lab = lab_factory(["h1", "h2", "h3"], groups={"gpu": ["h1", "h3"], "storage": ["h2"]})
    lab.write_inventory(tmp_path / "hosts.ini", extra={
        "h1": {"gate_sim_hardware": "gpu-a100"},  # lspci: 8x A100 + 9 SR-IOV VFs at x0
        "h2": {"gate_sim_hardware": "lab-storage-nvme", "gate_sim_captures": str(TEST_CAPTURES)},
        "h3": {"gate_sim_hardware": "gpu-a100"}})
    (tmp_path / "known_hosts").write_text(lab.known_hosts.read_text())
    env = {**os.environ, "GATE_DB": f"sqlite:///{tmp_path / 'gate.db'}",
           "GATE_SUDO_PASSWORD": lab.password}
    env.pop("GATE_CONFIG", None)

    def run_g1(firmware: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "gate.yaml").write_text(CONFIG.format(os_name=_os_name(), firmware=firmware))
        return subprocess.run([sys.executable, "-m", "harness", "run", "G1"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)

    def checks(run: int) -> dict[tuple[str, str], dict[str, str]]:
        """(host, check id) -> the stored check."""
        show = subprocess.run([sys.executable, "-m", "harness", "runs", "show", str(run),
                               "--json"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, check=True)
        return {(c["host"] or "-", c["nodeid"].rsplit("::", 1)[-1]): c
                for c in json.loads(show.stdout)["checks"]}

    lab.cut_link("h3")
    # One of the three FireCudas runs SU6SM005: a mismatch decides the gate (STOP-LOSS),
    # and the cut host is ERROR beside it, not a STOP-LOSS.
    out = run_g1(", firmware: SU6SM001")
    assert out.returncode == 1, out.stdout + out.stderr
    by = checks(1)
    nvme = by[("h2", "test_item[h2-nvme]")]
    assert nvme["outcome"] == "STOP-LOSS"
    assert "h2 nvme" in nvme["message"] and "/dev/nvme0n1: firmware SU6SM005" in nvme["message"]
    assert "SU6SM001 ordered" in nvme["message"] and "3x FireCuda 530" in nvme["expected"]
    assert all(c["outcome"] == "ERROR" and "unreachable" in c["message"]
               for (host, _), c in by.items() if host == "h3")
    assert len([1 for host, _ in by if host == "h3"]) == 6  # gpu, os and 4 health checks
    h1 = {name: c["outcome"] for (host, name), c in by.items() if host == "h1"}
    assert h1 == {"test_item[h1-gpu]": "PASS", "test_item[h1-os]": "PASS",
                  "test_health[h1-gpu-ecc]": "PASS", "test_health[h1-gpu-link]": "PASS",
                  "test_health[h1-xid]": "PASS", "test_health[h1-pcie]": "PASS"}
    assert "9 VFs skipped" in by[("h1", "test_health[h1-pcie]")]["measured"]
    # lspci is simulated on h2 without a capture: the tool is missing -> ERROR, not PASS.
    assert by[("h2", "test_health[h2-pcie]")]["outcome"] == "ERROR"
    assert "tool missing" in by[("h2", "test_health[h2-pcie]")]["message"]
    assert by[("h2", "test_health[h2-nvme-smart]")]["outcome"] == "PASS"

    tables = run_tables(Store(env["GATE_DB"]), 1)
    facts = {(r.host, r.key): r.value for r in tables.facts.itertuples()}
    assert "1650522003820" in str(facts[("h1", "gpu serials")])
    assert "7VS00KNX" in str(facts[("h2", "nvme serials")])
    artifacts = tables.artifacts
    smi = artifacts[artifacts["kind"] == "g1:nvidia-smi"].iloc[0]
    saved = tmp_path / "artifacts" / "run-1" / "g1" / "h1" / "nvidia-smi.txt"
    assert smi["sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
    assert set(artifacts["host"]) == {"h1", "h2"}

    # No firmware ordered, the host still cut: ERROR (nothing decided), never STOP-LOSS.
    out = run_g1("")
    assert out.returncode == 3, out.stdout + out.stderr
    outcomes = {name: c["outcome"] for (_, name), c in checks(2).items()}
    assert outcomes["test_item[h2-nvme]"] == "PASS" and "STOP-LOSS" not in outcomes.values()
