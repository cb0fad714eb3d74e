"""After a part is replaced (RMA) G1 reruns whole: the first run's STOP-LOSS stays on
record, the rerun PASSes, and the serial change is recorded (host fact, event, and the
check's measured text) and shown on the report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gate_testing import GateRunner

from harness.sim.hosts import PACKAGED

T4 = "nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml"
CONFIG_G1 = """\
simulated: true
gates:
  g1:
    bom:
      gpu: {gpu: {model: Tesla T4, count: 1, min_driver: "515"}}
    unverifiable: {pcie: "no lspci capture", xid: "not this machine's kernel"}
"""


def _profile(captures: Path, xml: str) -> None:
    """A captures directory of one's own (gate_sim_captures): the T4 as delivered, then the
    replacement card. The replacement is the same capture with another serial and the link
    at full width: the edge this test needs, which no published capture shows."""
    captures.mkdir(exist_ok=True)
    (captures / "t4.xml").write_text(xml, encoding="utf-8")
    (captures / "profiles.yaml").write_text(
        "version: 1\nprofiles:\n  t4-host:\n    description: a T4 host\n    commands:\n"
        "      - capture: t4.xml\n        forms: [[nvidia-smi, -q, -x]]\n", encoding="utf-8")


def test_rma_rerun_shows_the_failure_the_serial_change_and_the_pass(
        gate_cli: GateRunner, site_dir: Path) -> None:
    delivered = (PACKAGED / T4).read_text(encoding="utf-8")
    width = "<current_link_width>{}</current_link_width>"
    replaced = delivered.replace("<serial>0000000000000</serial>",
                                 "<serial>1320721083961</serial>").replace(
        width.format("8x"), width.format("16x"))
    assert replaced != delivered
    captures = site_dir / "captures"
    (site_dir / "hosts.ini").write_text(
        "[gpu]\ngpu1 ansible_connection=local gate_sim_hardware=t4-host "
        "gate_sim_captures=captures\n")
    with (site_dir / "gate.yaml").open("a") as f:
        f.write(CONFIG_G1)

    _profile(captures, delivered)
    first = gate_cli("run", "G1")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "gpu1 gpu-link: GPU 00000000:00:1E.0: PCIe link x8 of x16" in " ".join(
        first.stdout.split())  # the outcome line wraps between words

    _profile(captures, replaced)  # the card was swapped under RMA
    second = gate_cli("run", "G1")
    assert second.returncode == 0, second.stdout + second.stderr

    show = json.loads(gate_cli("runs", "show", "2", "--json").stdout)
    gpu = next(c for c in show["checks"] if c["nodeid"].endswith("test_item[gpu1-gpu]"))
    assert "gpu serials changed since run 1" in gpu["measured"]
    listing = json.loads(gate_cli("runs", "list", "--json", "--gate", "G1").stdout)
    assert [r["verdict"] for r in listing] == ["STOP-LOSS", "PASS"]

    pdf = site_dir / "g1.pdf"
    assert gate_cli("report", "2", "-o", str(pdf)).returncode == 0
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "serial change: gpu serials" in text and "1320721083961" in text
    assert "#1 STOP-LOSS" in text  # the earlier attempt is on page 1
