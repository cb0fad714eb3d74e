"""G1's Xid check on the namespace lab, each GPU host's kernel journal answered from a real
capture (tests/fixtures/simhosts) while its ring buffer is empty, as after `dmesg -C`:
an Xid in the journal is a STOP-LOSS naming the GPUs, a journal of the whole boot without
one is a PASS, and no journal is INCONCLUSIVE "Xid unverifiable", never a PASS.

dmesg on a simulated host is refused like any hardware tool (it would read this machine's
kernel), so here it is "not read": the journal alone decides, as it must."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.netlab import LabFactory
from tests.lab_site import TEST_CAPTURES, lab_site

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = pytest.mark.lab

CONFIG = """\
site: {name: lab-site}
campaign: {name: g1-xid}
inventory: hosts.ini
known_hosts: known_hosts
model: {name: test/model}
simulated: true
gates:
  g1:
    bom:
      gpu:
        gpu: {model: A100-SXM4-80GB, count: 1}
    unverifiable: {pcie: "no lspci capture", gpu-ecc: "no nvidia-smi capture here",
                   gpu-link: "no nvidia-smi capture here", gpu: "no nvidia-smi capture here"}
"""


def test_xid_is_read_from_the_journal_dmesg_never_passes_alone(lab_factory: LabFactory,
                                                              tmp_path: Path) -> None:
    lab = lab_factory(["x1", "x2", "x3"], groups={"gpu": ["x1", "x2", "x3"]})
    site = lab_site(lab, tmp_path, extra={
        host: {"gate_sim_hardware": profile, "gate_sim_captures": str(TEST_CAPTURES)}
        for host, profile in (("x1", "lab-journal-xid"), ("x2", "lab-journal-boot"),
                              ("x3", "lab-journal-none"))})
    site.write_config(CONFIG)
    out = site.gate("run", "G1")
    assert out.returncode == 1, out.stdout + out.stderr  # the Xid decides the gate
    by = site.checks(1)
    x1, x2, x3 = (by[f"test_health[{h}-xid]"] for h in ("x1", "x2", "x3"))
    assert x1["outcome"] == "STOP-LOSS"
    assert "Xid 45 on PCI:0000:dc:00 (journal)" in x1["message"]
    assert "journal: 7 Xid in 7 lines (not the whole boot); dmesg: not read" in x1["measured"]
    assert x2["outcome"] == "PASS" and x2["measured"].startswith("journal: 0 Xid in 8 lines")
    assert x3["outcome"] == "INCONCLUSIVE"
    assert "Xid unverifiable: no kernel messages of this boot in the journal" in x3["message"]
    assert x3["expected"] == "no NVIDIA Xid in the kernel log since boot"
