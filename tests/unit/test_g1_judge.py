"""G1's plan and its expected-vs-found judgements on captured outputs (tests/fixtures/hw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config.inventory import load_inventory
from harness.config.models import GpuBom, NicBom, NvmeBom, SiteConfig, VolumeBom
from harness.errors import UsageError
from harness.g1 import judge
from harness.g1.plan import expected_checks, optional_checks, validate
from harness.probes import lspci, nic, nvidia_smi, nvme
from harness.reasons import Reason

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def site(tmp_path: Path, g1: dict[str, object]) -> tuple[SiteConfig, object]:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n"
                                        "[storage]\ns1 ansible_connection=local\n")
    config = SiteConfig.model_validate({"site": {"name": "s"}, "campaign": {"name": "c"},
                                        "inventory": "hosts.ini", "model": {"name": "m"},
                                        "gates": {"g1": g1}})
    return config, load_inventory(tmp_path / "hosts.ini")


def test_plan_is_host_by_item_and_health(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {
        "bom": {"gpu": {"gpu": {"model": "H100", "count": 8}, "nic": {"model": "MT4129",
                                                                        "count": 8}},
                "storage": {"nvme": {"model": "PM1743", "count": 4}}},
        "unverifiable": {"pcie": "no lspci here"}})
    validate(config, inv)  # type: ignore[arg-type]
    assert expected_checks(config, inv) == [  # type: ignore[arg-type]
        "test_item[g1-gpu]", "test_item[g1-nic]", "test_item[s1-nvme]",
        "test_health[g1-gpu-ecc]", "test_health[g1-gpu-link]", "test_health[g1-xid]",
        "test_health[g1-pcie]", "test_health[g1-ib-ports]", "test_health[s1-pcie]",
        "test_health[s1-nvme-smart]", "test_clocks"]
    assert optional_checks(config, inv) == [  # type: ignore[arg-type]
        "test_health[g1-pcie]", "test_health[s1-pcie]"]


def test_plan_refuses_unknown_groups_and_keys(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {"bom": {"gpus": {"gpu": {"model": "H100", "count": 8}}}})
    with pytest.raises(UsageError, match="no inventory group 'gpus'"):
        validate(config, inv)  # type: ignore[arg-type]
    config, inv = site(tmp_path, {"bom": {"gpu": {"os": {"kernel": "6."}}},
                                  "unverifiable": {"ecc": "x"}})
    with pytest.raises(UsageError, match="'ecc' is no G1 item"):
        validate(config, inv)  # type: ignore[arg-type]


def test_gpu_count_model_driver() -> None:
    log = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    assert judge.gpu(GpuBom(model="RTX A5000", count=2, min_driver="550.54"), log).ok
    miss = judge.gpu(GpuBom(model="H100", count=8, min_driver="595", min_cuda="13.0"), log)
    assert miss.problems == ("0 x H100, 8 ordered (also found: NVIDIA RTX A5000)",
                             "driver 590.44.01 < 595")
    assert miss.facts["gpu serials"] == ["0123456789012", "1234567890123"]


def test_trimmed_nvidia_smi_log_is_said_in_found() -> None:
    log = nvidia_smi.parse_nvidia_smi_xml(
        read("nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml"))
    found = judge.gpu(GpuBom(model="A100", count=4), log)
    assert not found.ok and "nvidia-smi says 4 attached" in found.found


def test_nvme_firmware_and_capacity() -> None:
    drives = nvme.parse_nvme_list(read("nvme-list-json_netdata_v2.11_3x-firecuda530.json"))
    assert judge.nvme(NvmeBom(model="FireCuda 530", count=3, min_capacity_gb=4000), drives).ok
    miss = judge.nvme(NvmeBom(model="FireCuda 530", count=3, min_capacity_gb=7680,
                              firmware="SU6SM001"), drives)
    assert "/dev/nvme0n1: firmware SU6SM005, SU6SM001 ordered" in miss.problems
    assert sum("GB < 7680 GB" in p for p in miss.problems) == 3


def test_nic_ib_rate_and_ports() -> None:
    cas = nic.parse_ibstat(read("ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt"))
    assert judge.nic_ib(NicBom(model="MT4129", count=8, min_rate_gbps=400,
                               firmware="28.41.1000"), cas).ok
    assert len(judge.ib_ports(cas).problems) == 2  # the two Disabled CX-6 Dx ports
    assert judge.ib_ports([c for c in cas if c.model == "MT4129"]).ok


def test_nic_ethtool() -> None:
    links = {"eth0": nic.parse_ethtool(read("ethtool_node-exporter_e1000e_eth0.txt"))}
    drivers = {"eth0": nic.parse_ethtool_driver(read("ethtool-i_node-exporter_e1000e_eth0.txt"))}
    assert judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"],
                                min_rate_gbps=1), links, drivers).ok
    slow = judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"],
                                min_rate_gbps=100), links, drivers)
    assert slow.problems == ("eth0: link 1 Gb/s < 100",)


def test_health_link_width_not_speed() -> None:
    a5000 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    assert judge.gpu_link(a5000).ok  # gen 1 of 4 at idle, x16 of x16: power saving
    t4 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml"))
    assert judge.gpu_link(t4).problems == ("GPU 00000000:00:1E.0: PCIe link x8 of x16",)
    devices = lspci.parse_lspci(read("lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt"))
    assert judge.pcie(devices).ok


def test_xid_and_smart() -> None:
    log = ("[ 12.3] nvidia-nvlink: Nvlink Core is being initialized\n"
           "[812.1] NVRM: Xid (PCI:0000:17:00): 79, pid=0, GPU has fallen off the bus.\n")
    assert judge.xid(judge.KernelLogs(None, log, "no journal")).problems == (
        "Xid 79 on PCI:0000:17:00 (dmesg)",)
    smart = nvme.parse_smart_log(read("nvme-smart-log-json_netdata_v2.3.json"))
    assert judge.nvme_smart({"nvme0n1": smart}).ok


def test_volume_paths() -> None:
    subs = nvme.parse_list_subsys(
        '[{"Subsystems":[{"Name":"nvme-subsys1","NQN":"nqn.v","Paths":[{"Name":"nvme1",'
        '"Transport":"tcp","Address":"traddr=10.0.0.9,trsvcid=4420","State":"live"}]}]}]')
    assert judge.volume(VolumeBom(nqn="nqn.v"), subs).ok
    assert judge.volume(VolumeBom(nqn="nqn.v", min_paths=2), subs).problems == (
        "1 live tcp path(s), 2 needed",)
    assert judge.volume(VolumeBom(nqn="nqn.other"), subs).problems == (
        "NQN nqn.other not connected",)


def test_volume_size_from_the_namespaces_of_its_nqn() -> None:
    """nvme-cli 2.11 names each namespace's subsystem: the volume's size is theirs."""
    drives = nvme.parse_nvme_list(read("nvme-list-json_netdata_v2.11_3x-firecuda530.json"))
    nqn = drives[0].subsystem_nqn
    assert nqn is not None and nqn.endswith("Seagate FireCuda 530 ZP4000GM30023")
    path = {"Name": "nvme0", "Transport": "pcie", "Address": "0000:01:00.0", "State": "live"}
    subs = nvme.parse_list_subsys(json.dumps(
        [{"Subsystems": [{"Name": "nvme-subsys0", "NQN": nqn, "Paths": [path]}]}]))
    bom = VolumeBom(nqn=nqn, transport="pcie", min_size_gb=4000)
    assert judge.volume(bom, subs, drives).ok
    big = VolumeBom(nqn=nqn, transport="pcie", min_size_gb=8000)
    assert judge.volume(big, subs, drives).problems == ("volume 4001 GB < 8000 GB",)


def test_software_and_weights_from_real_tool_output(tmp_path: Path) -> None:
    """sha256sum, stat and the versions script run for real on files made here."""
    import hashlib
    import subprocess
    import sys

    from harness.config.models import FileDigest, SoftwareBom, WeightsBom
    from harness.g1.collect import VERSIONS_SCRIPT
    from harness.probes import files

    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "model-00001.safetensors").write_bytes(b"weights" * 1000)
    (tmp_path / "w" / "config.json").write_text('{"layers": 64}')
    manifest = {p.name: FileDigest(size=p.stat().st_size,
                                   sha256=hashlib.sha256(p.read_bytes()).hexdigest())
                for p in (tmp_path / "w").iterdir()}
    manifest["tokenizer.json"] = FileDigest(size=1, sha256="0" * 64)
    paths = [str(tmp_path / "w" / name) for name in sorted(manifest)]
    sizes = subprocess.run(["stat", "-c", "%s %n", *paths], capture_output=True, text=True)
    sums = subprocess.run(["sha256sum", *paths], capture_output=True, text=True)
    assert sizes.returncode == 1 and sums.returncode == 1  # one file is missing
    found = judge.weights(WeightsBom(directory=str(tmp_path / "w"), manifest=manifest),
                          files.parse_stat_sizes(sizes.stdout),
                          files.parse_sha256sum(sums.stdout))
    assert found.problems == ("tokenizer.json: missing",)
    (tmp_path / "w" / "config.json").write_text('{"layers": 65}')
    sums = subprocess.run(["sha256sum", *paths[:2]], capture_output=True, text=True)
    bom = WeightsBom(directory=str(tmp_path / "w"), manifest=manifest)
    changed = judge.weights(bom, files.parse_stat_sizes(sizes.stdout),
                            files.parse_sha256sum(sums.stdout))
    assert changed.problems[0].startswith("config.json: sha256 ")

    out = subprocess.run([sys.executable, "-c", VERSIONS_SCRIPT, "pydantic", "no-such-dist"],
                         capture_output=True, text=True, check=True).stdout
    versions = files.parse_versions(out)
    assert versions["no-such-dist"] is None and versions["pydantic"]
    ok = judge.software(SoftwareBom(packages={"pydantic": str(versions["pydantic"])}), versions)
    assert ok.ok and ok.facts["software"] == versions
    miss = judge.software(SoftwareBom(packages={"no-such-dist": "1.0"}), versions)
    assert miss.problems == ("no-such-dist not installed, 1.0 ordered",)


def test_every_health_expectation_is_said_in_the_report_language() -> None:
    """The Chinese report showed G1's health expectations in English: each judge gives
    its expectation as a reason code too, and the English catalogue says exactly the
    harness's words (harness/reasons.py)."""
    from harness.probes import gpu_health
    from harness.report import reasons
    from harness.report.i18n import translator

    en, zh = translator("en"), translator("zh")
    a5000 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    findings = [
        judge.gpu_ecc(a5000), judge.gpu_link(a5000), judge.xid(judge.KernelLogs("", "")),
        judge.pcie(lspci.parse_lspci(
            read("lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt"))),
        judge.nvme_smart({"nvme0n1": nvme.parse_smart_log(
            read("nvme-smart-log-json_netdata_v2.3.json"))}),
        judge.ib_ports(nic.parse_ibstat(
            read("ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt"))),
        judge.gds(gpu_health.parse_gdscheck(read("gdscheck-p_blog_8xH100_gds1.13.txt"))),
    ]
    for f in findings:
        assert f.expected_why is not None, f.expected
        assert reasons.say(en, f.expected_why) == f.expected
        assert any("\u4e00" <= c <= "\u9fff" for c in reasons.say(zh, f.expected_why))


def test_every_finding_is_said_in_the_report_language() -> None:
    """Each judge gives its expected and found words as reason codes too (the check's
    columns in the report): the English catalogue says exactly the harness's words, and a
    Chinese report says them in Chinese, or as written where they are names and numbers
    (the `text` code: models, versions, link widths)."""
    from harness.config.models import FileDigest, OsBom, SoftwareBom, WeightsBom
    from harness.probes import gpu_health
    from harness.report import reasons
    from harness.report.i18n import translator

    en, zh = translator("en"), translator("zh")
    a5000 = nvidia_smi.parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    a100 = nvidia_smi.parse_nvidia_smi_xml(
        read("nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml"))
    mig = nvidia_smi.parse_nvidia_smi_xml(
        read("nvidia-smi-q-x_netdata_a100-sxm4-40gb-mig_drv510.xml"))
    empty = nvidia_smi.NvidiaSmiLog(None, None, None, ())
    drives = nvme.parse_nvme_list(read("nvme-list-json_netdata_v2.11_3x-firecuda530.json"))
    cas = nic.parse_ibstat(read("ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt"))
    links = {"eth0": nic.parse_ethtool(read("ethtool_node-exporter_e1000e_eth0.txt"))}
    drivers = {"eth0": nic.parse_ethtool_driver(read("ethtool-i_node-exporter_e1000e_eth0.txt")),
               "eth1": nic.parse_ethtool_driver(read("ethtool-i_ethq-issue8_mlx5_core_cx4lx.txt"))}
    named = {judge.pci_address(drivers["eth1"].bus_info) or "": "MT27710 [ConnectX-4 Lx]"}
    nqn = drives[0].subsystem_nqn or ""
    path = {"Name": "nvme0", "Transport": "pcie", "Address": "0000:01:00.0", "State": "live"}
    subs = nvme.parse_list_subsys(json.dumps(
        [{"Subsystems": [{"Name": "nvme-subsys0", "NQN": nqn, "Paths": [path]}]}]))
    smart = nvme.parse_smart_log(read("nvme-smart-log-json_netdata_v2.3.json"))
    digest = FileDigest(size=3, sha256="0" * 64)
    findings = [
        judge.gpu(GpuBom(model="RTX A5000", count=2, min_driver="550.54", min_cuda="12.0"),
                  a5000),
        judge.gpu(GpuBom(model="A100", count=4), a100),  # "nvidia-smi says 4 attached"
        judge.gpu(GpuBom(model="H100", count=8), empty),
        judge.nvme(NvmeBom(model="FireCuda 530", count=3, min_capacity_gb=7680,
                           firmware="SU6SM001"), drives),
        judge.nvme(NvmeBom(model="x", count=1), []),
        judge.nic_ib(NicBom(model="MT4129", count=8, min_rate_gbps=400,
                            firmware="28.41.1000"), cas),
        judge.nic_ib(NicBom(model="MT4129", count=1), []),
        judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"], min_rate_gbps=1),
                      links, drivers, named),  # eth0 named by its driver, eth1 link down
        judge.nic_eth(NicBom(model="e1000e", count=1, interfaces=["eth0"]), {}, {}),
        judge.gds(gpu_health.parse_gdscheck(read("gdscheck-p_blog_8xH100_gds1.13.txt"))),
        judge.gds(gpu_health.GdsCheck(None, {}, 0, 0, None, False)),
        judge.volume(VolumeBom(nqn=nqn, transport="pcie", min_size_gb=8000), subs, drives),
        judge.volume(VolumeBom(nqn=nqn, transport="pcie", min_paths=2), subs),
        judge.volume(VolumeBom(nqn="nqn.other"), subs),
        judge.volume(VolumeBom(nqn="nqn.other"), []),
        judge.os_release(OsBom(os="Ubuntu 22.04", kernel="5.15"), "6.8.0-45-generic\n",
                         'PRETTY_NAME="Ubuntu 24.04.1 LTS"\n'),
        judge.os_release(OsBom(kernel="6.8"), "6.8.0\n", ""),
        judge.os_release(OsBom.model_construct(os=None, kernel=None), "6.8.0\n", ""),
        judge.software(SoftwareBom(packages={"vllm": "0.6.3", "lmcache": "0.2"}),
                       {"vllm": "0.6.3", "lmcache": None}),
        judge.weights(WeightsBom(directory="/w", manifest={"a": digest, "b": digest}),
                      {"/w/a": 3}, {"/w/a": "0" * 64}),
        judge.gpu_ecc(a5000), judge.gpu_ecc(mig), judge.gpu_ecc(empty),
        judge.gpu_link(a5000), judge.gpu_link(empty),
        judge.pcie(lspci.parse_lspci(
            read("lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt"))),
        judge.nvme_smart({"nvme0n1": smart}), judge.nvme_smart({}),
        judge.ib_ports(cas),
        judge.xid(judge.KernelLogs("", "")),
        judge.xid(judge.KernelLogs(None, None, "journalctl: not found", "dmesg: denied")),
        judge.xid(judge.KernelLogs("kernel: Linux version 6.8\nNVRM: Xid (PCI:0000:17:00): "
                                   "79, pid=0\n", "[1.0] NVRM: Xid (PCI:0000:17:00): 79,")),
        judge.xid(judge.KernelLogs("Dec 01 host kernel: something\n", "")),
    ]
    for f in findings:
        assert f.expected_why is not None and f.found_why is not None, (f.expected, f.found)
        assert reasons.say(en, f.expected_why) == f.expected
        assert reasons.say(en, f.found_why) == f.found
        for why, words in ((f.expected_why, f.expected), (f.found_why, f.found)):
            said = reasons.say(zh, why)  # Chinese wherever its codes have Chinese words
            assert said == words if why.code == "text" else \
                said.isascii() == all(zh.messages[f"reason.{c}"].isascii() for c in _codes(why))
    assert reasons.say(zh, findings[1].found_why).endswith("（nvidia-smi 显示挂载 4 块）")
    assert reasons.say(zh, findings[21].found_why).startswith("00000000:")  # MIG: unread ECC
    assert "链路断开" in reasons.say(zh, findings[7].found_why)
    miss = judge.gpu(GpuBom(model="H100", count=8, min_driver="595"), a5000)
    missed = judge.missed("g1", "gpu", miss)  # the STOP-LOSS message says "found" in zh too
    assert "实测 2x NVIDIA RTX A5000，驱动 " in reasons.say(zh, missed)
    assert reasons.say(en, missed).endswith(f"(expected {miss.expected}; found {miss.found})")


def _codes(r: Reason) -> list[str]:
    """Every code in a reason, nested ones too."""
    nested = [v for v in r.params.values() if isinstance(v, Reason)]
    return [r.code, *(c for x in (*nested, *r.parts) for c in _codes(x))]
