"""G1 end to end on the namespace lab: real sshds, hosts whose hardware tools answer from
captures (the rest, uname included, runs on the host; the kernel log, journalctl and
dmesg, is this machine's, so a simulated host answers it from captures or not at all),
one host whose link is cut.

A BOM mismatch is a STOP-LOSS naming host, item, expected and found; an unreachable host
or a missing tool is refused by the pre-flight before anything is recorded (exit 4); met
once checks run, it is ERROR for that host's checks only, never a STOP-LOSS; a tool
declared unverifiable is SKIPPED; every raw output is an artifact with its sha256 and
every serial a host fact."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from harness.store import Store
from harness.store.queries import run_tables
from tests.lab.netlab import LabFactory
from tests.lab_site import TEST_CAPTURES, lab_site

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab

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
    site = lab_site(lab, tmp_path, extra={
        "h1": {"gate_sim_hardware": "gpu-a100"},  # lspci: 8x A100 + 9 SR-IOV VFs at x0
        "h2": {"gate_sim_hardware": "lab-storage-nvme", "gate_sim_captures": str(TEST_CAPTURES)},
        "h3": {"gate_sim_hardware": "gpu-a100"}})

    def run_g1(firmware: str, optional: str = "") -> subprocess.CompletedProcess[str]:
        site.write_config(CONFIG.format(os_name=_os_name(), firmware=firmware) + optional)
        return site.gate("run", "G1")

    lab.cut_link("h3")
    # The pre-flight finds the cut host and h2's lspci (simulated there without a capture)
    # before anything is recorded: exit 4, one line each.
    out = run_g1(", firmware: SU6SM001")
    assert out.returncode == 4, out.stdout + out.stderr
    refused = [e for e in out.stderr.splitlines() if e.startswith("gate: error:")]
    assert any("host h3" in e for e in refused), refused
    lspci = next(e for e in refused if "host h2: lspci is not on sudo's PATH" in e)
    assert "gates.g1.unverifiable: {pcie: WHY}" in lspci, lspci  # what to do
    assert "nothing was recorded" in refused[-1] and len(refused) == 3, refused
    # Once checks start, what they meet is recorded and disclosed: a run that selects its
    # checks (`-k`) is not pre-flighted, so the cut host and the missing tool reach the
    # checks. One of the three FireCudas runs SU6SM005: a mismatch decides the gate
    # (STOP-LOSS), and the cut host is ERROR beside it, not a STOP-LOSS.
    site.write_config(CONFIG.format(os_name=_os_name(), firmware=", firmware: SU6SM001"))
    out = site.gate("run", "G1", "--", "-k", "test_")
    assert out.returncode == 1, out.stdout + out.stderr
    by = site.checks(1)
    nvme = by["test_item[h2-nvme]"]
    assert nvme["outcome"] == "STOP-LOSS"
    assert "h2 nvme" in nvme["message"] and "/dev/nvme0n1: firmware SU6SM005" in nvme["message"]
    assert "SU6SM001 ordered" in nvme["message"] and "3x FireCuda 530" in nvme["expected"]
    h3 = [c for c in by.values() if c["host"] == "h3"]
    assert all(c["outcome"] == "ERROR" and "unreachable" in c["message"] for c in h3)
    assert len(h3) == 6  # gpu, os and 4 health checks
    h1 = {name: c["outcome"] for name, c in by.items() if c["host"] == "h1"}
    assert h1 == {"test_item[h1-gpu]": "PASS", "test_item[h1-os]": "PASS",
                  "test_health[h1-gpu-ecc]": "PASS", "test_health[h1-gpu-link]": "PASS",
                  "test_health[h1-xid]": "INCONCLUSIVE", "test_health[h1-pcie]": "PASS"}
    # no kernel log of h1's own (gpu-a100 has no journal capture): Xid is unverifiable
    assert "Xid unverifiable" in by["test_health[h1-xid]"]["message"]
    assert "9 VFs skipped" in by["test_health[h1-pcie]"]["measured"]
    # lspci is simulated on h2 without a capture: the tool is missing -> ERROR, not PASS.
    assert by["test_health[h2-pcie]"]["outcome"] == "ERROR"
    assert "tool missing" in by["test_health[h2-pcie]"]["message"]
    assert by["test_health[h2-nvme-smart]"]["outcome"] == "PASS"

    tables = run_tables(Store(site.env["GATE_DB"]), 1)
    facts = {(r.host, r.key): r.value for r in tables.facts.itertuples()}
    assert "1650522003820" in str(facts[("h1", "gpu serials")])
    assert "7VS00KNX" in str(facts[("h2", "nvme serials")])
    artifacts = tables.artifacts
    smi = artifacts[artifacts["kind"] == "g1:nvidia-smi"].iloc[0]
    saved = tmp_path / "artifacts" / "run-1" / "g1" / "h1" / "nvidia-smi.txt"
    assert smi["sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
    probes = artifacts[artifacts["kind"] != "run inputs"]  # beside the run's own inputs
    assert set(probes["host"]) == {"h1", "h2"}

    lab.restore_link("h3")
    # PCIe declared unverifiable (G1's way to run without lspci): SKIPPED, never PASS.
    pcie_optional = "    unverifiable: {pcie: \"no lspci capture on h2\"}\n"
    out = run_g1(", firmware: SU6SM001", pcie_optional)
    assert out.returncode == 1, out.stdout + out.stderr
    by = site.checks(2)
    for host in ("h1", "h3"):  # the same simulated hardware
        seen = {name.replace(host, "H"): c["outcome"] for name, c in by.items()
                if c["host"] == host}
        assert seen == {"test_item[H-gpu]": "PASS", "test_item[H-os]": "PASS",
                        "test_health[H-gpu-ecc]": "PASS", "test_health[H-gpu-link]": "PASS",
                        "test_health[H-xid]": "INCONCLUSIVE", "test_health[H-pcie]": "SKIPPED"}
    assert by["test_health[h2-pcie]"]["outcome"] == "SKIPPED"

    # No firmware ordered: h2's lspci undeclared is refused again (no run row); declared,
    # run 3 mismatches nothing and Xid stays unverifiable: INCONCLUSIVE, no STOP-LOSS.
    out = run_g1("")
    assert out.returncode == 4, out.stdout + out.stderr
    out = run_g1("", pcie_optional)
    assert out.returncode == 2, out.stdout + out.stderr  # Xid unverifiable: INCONCLUSIVE
    outcomes = {name: c["outcome"] for name, c in site.checks(3).items()}
    assert outcomes["test_item[h2-nvme]"] == "PASS" and "STOP-LOSS" not in outcomes.values()
