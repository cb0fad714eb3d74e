"""G1 health checks that read nothing never PASS (REVIEW-R3 F4), the BOM covers the gpu
group (F13), and the smaller BOM holes (F12): on real captures (tests/fixtures/hw)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gates.g1_arrival import test_g1 as suite
from harness.config.inventory import Inventory, load_inventory
from harness.config.models import Bom, NicBom, OsBom, SiteConfig
from harness.errors import MeasurementError, ParseError, UsageError
from harness.g1 import judge
from harness.g1.collect import HostReading, Probe, ProbeOutput
from harness.g1.plan import HostPlan, expected_checks, validate, weakened
from harness.probes import lspci, nic, nvidia_smi
from harness.transport.result import CommandResult

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"
MIG = "nvidia-smi-q-x_netdata_a100-sxm4-40gb-mig_drv510.xml"
AZURE = "lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt"


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def reading(**outputs: str) -> HostReading:
    return HostReading("h", outputs={
        n.replace("_", "-"): ProbeOutput(Probe(n, (n,)), result=CommandResult(
            host="h", argv=(n,), rc=0, stdout=t, stderr="", started=0.0, duration=0.0))
        for n, t in outputs.items()})


def denied(lspci_vvv: str) -> str:
    """The same machine read by a non-root lspci: each device's capability list becomes
    `Capabilities: <access denied>` (what lspci prints without root)."""
    out: list[str] = []
    for line in lspci_vvv.splitlines():
        flat = line.expandtabs(8)
        if len(flat) - len(flat.lstrip()) > 8:  # a capability's own lines
            continue
        if flat.strip().startswith("Capabilities:"):
            if out[-1] != "\tCapabilities: <access denied>":
                out.append("\tCapabilities: <access denied>")
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def test_gpu_ecc_on_a_mig_a100_reads_nothing() -> None:
    log = nvidia_smi.parse_nvidia_smi_xml(read(MIG))  # ECC on, every counter N/A
    finding = judge.gpu_ecc(log)
    assert finding.ok and finding.checked == 0
    message = judge.unjudged("gpu-ecc", finding)
    assert message is not None and "cannot judge" in message
    assert f"N/A on all {len(log.gpus)}" in message


def test_gpu_ecc_off_is_read_and_counters_are_judged() -> None:
    a5000 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    assert judge.unjudged("gpu-ecc", judge.gpu_ecc(a5000)) is None  # ECC off: shown, read
    a100 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_"
                                                "drv535.xml"))
    assert judge.gpu_ecc(a100).checked == 1 and judge.unjudged("gpu-ecc",
                                                                judge.gpu_ecc(a100)) is None


def test_gpu_link_with_na_width_is_not_a_pass() -> None:
    t4 = re.sub(r"<current_link_width>[^<]*</current_link_width>",
                "<current_link_width>N/A</current_link_width>",
                read("nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml"))
    finding = judge.gpu_link(nvidia_smi.parse_nvidia_smi_xml(t4))
    assert finding.ok and finding.checked == 0
    assert "its PCIe link width" in str(judge.unjudged("gpu-link", finding))


def test_pcie_access_denied_checks_no_link() -> None:
    devices = lspci.parse_lspci(denied(read(AZURE)))
    assert len(devices) == len(lspci.parse_lspci(read(AZURE)))
    finding = judge.pcie(devices)
    message = judge.unjudged("pcie", finding)
    assert finding.checked == 0 and message is not None and "N/A on all" in message
    assert judge.unjudged("pcie", judge.pcie(lspci.parse_lspci(read(AZURE)))) is None


def test_nvme_smart_needs_a_readable_nonempty_list() -> None:
    plan = HostPlan("h", "gpu", Bom.model_validate({"nvme": {"model": "PM1733", "count": 4}}),
                    ("nvme",), ("pcie", "nvme-smart"))
    with pytest.raises(ParseError):
        suite._judge_health(plan, "nvme-smart", reading(nvme_list="nvme: warning\n{"))
    empty = suite._judge_health(plan, "nvme-smart",
                                reading(nvme_list=read("nvme-list-json_netdata_empty.json")))
    assert judge.unjudged("nvme-smart", empty) == ("nvme-smart: nvme list found no drive: "
                                                   "cannot judge")
    listed = reading(nvme_list=read("nvme-list-json_netdata_v2.11_3x-firecuda530.json"))
    with pytest.raises(MeasurementError, match=r"no smart-log\.nvme0n1 output"):
        suite._judge_health(plan, "nvme-smart", listed)  # a drive without its log: ERROR


def test_ib_ports_of_no_ordered_hca_is_an_error() -> None:
    plan = HostPlan("h", "gpu", Bom.model_validate({"nic": {"model": "ConnectX-7",
                                                           "count": 8}}), ("nic",), ())
    ibstat = reading(ibstat=read("ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt"))
    with pytest.raises(MeasurementError, match="CA types: MT4125, MT4129"):
        suite._judge_health(plan, "ib-ports", ibstat)


def test_nic_model_is_the_device_name_not_the_driver() -> None:
    link = nic.parse_ethtool(read("ethtool_node-exporter_e1000e_eth0.txt"))
    cx = nic.parse_ethtool_driver(read("ethtool-i_ethq-issue8_mlx5_core_cx4lx.txt"))
    names = {judge.pci_address(d.address) or "": d.description
             for d in lspci.parse_lspci(read(AZURE) + read(
                 "lspci-vvv_doc_connectx7-mt2910-gen5x16_single-device_tabs.txt"))}
    names[judge.pci_address(cx.bus_info) or ""] = "Mellanox Technologies MT27710 Family " \
                                                  "[ConnectX-4 Lx]"
    bom = NicBom(model="mlx5_core", count=1, interfaces=["eth0"])
    assert not judge.nic_eth(bom, {"eth0": link}, {"eth0": cx}, names).ok  # driver is no model
    cx7 = NicBom(model="ConnectX-7", count=1, interfaces=["eth0"])
    miss = judge.nic_eth(cx7, {"eth0": link}, {"eth0": cx}, names)
    assert miss.problems == ("0 interfaces with ConnectX-7, 1 ordered (also found: Mellanox "
                             "Technologies MT27710 Family [ConnectX-4 Lx])",)
    assert judge.nic_eth(NicBom(model="ConnectX-4 Lx", count=1, interfaces=["eth0"]),
                         {"eth0": link}, {"eth0": cx}, names).ok
    # no lspci name for the bus: the driver, said so in `found`
    e1000e = nic.parse_ethtool_driver(read("ethtool-i_node-exporter_e1000e_eth0.txt"))
    fallback = judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"]),
                             {"eth0": link}, {"eth0": e1000e}, {})
    assert fallback.ok and "lspci did not name the device" in fallback.found


def test_declared_nic_link_down_is_a_miss() -> None:
    up = read("ethtool_node-exporter_e1000e_eth0.txt")
    down = nic.parse_ethtool(up.replace("Speed: 1000Mb/s", "Speed: Unknown!")
                             .replace("Link detected: yes", "Link detected: no"))
    drv = nic.parse_ethtool_driver(read("ethtool-i_node-exporter_e1000e_eth0.txt"))
    finding = judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"]),
                            {"eth0": down}, {"eth0": drv})
    assert finding.problems == ("eth0: link down",)


def test_bom_refuses_count_zero_and_an_empty_os() -> None:
    bad: dict[str, Any]
    for bad in ({"gpu": {"model": "H100", "count": 0}}, {"nvme": {"model": "x", "count": 0}},
                {"nic": {"model": "x", "count": 0}}, {"os": {}}):
        with pytest.raises(ValidationError):
            Bom.model_validate(bad)
    assert OsBom(kernel="6.8").kernel == "6.8"


def _site(tmp_path: Path, bom: Mapping[str, object],
          simulated: bool = False) -> tuple[SiteConfig, Inventory]:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n"
                                        "g2 ansible_connection=local\n"
                                        "[client]\nc1 ansible_connection=local\n")
    config = SiteConfig.model_validate({
        "site": {"name": "s"}, "campaign": {"name": "c"}, "inventory": "hosts.ini",
        "model": {"name": "m"}, "simulated": simulated, "gates": {"g1": {"bom": bom}}})
    return config, load_inventory(tmp_path / "hosts.ini")


def test_bom_must_cover_the_gpu_group(tmp_path: Path) -> None:
    config, inv = _site(tmp_path, {"client": {"os": {"kernel": "6."}}})
    with pytest.raises(UsageError, match="G1 needs a BOM for the gpu group") as caught:
        validate(config, inv)
    assert caught.value.key == "gates.g1.bom.gpu"
    config, inv = _site(tmp_path, {"gpu": {"os": {"kernel": "6."}}})
    with pytest.raises(UsageError, match="orders no GPU"):
        validate(config, inv)


def test_short_gpu_bom_is_weakened_at_a_real_site(tmp_path: Path) -> None:
    bom = {"gpu": {"gpu": {"model": "H100", "count": 8}, "nic": {"model": "MT4129",
                                                                 "count": 8}}}
    config, inv = _site(tmp_path, bom)
    validate(config, inv)
    assert "test_item[g1-gpu]" in expected_checks(config, inv)
    assert weakened(config) == [
        "G1 gpu group: no nvme in its BOM (not checked at arrival)",
        "G1 gpu group: no volume in its BOM (not checked at arrival)",
        "G1 gpu group: no software in its BOM (not checked at arrival)"]
    assert weakened(_site(tmp_path, bom, simulated=True)[0]) == []
