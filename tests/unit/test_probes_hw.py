"""The hardware parsers on every captured output in tests/fixtures/hw (SOURCES.md there),
including the odd ones: no trailing newline, raw tabs, masked serials, MIG, a trimmed
nvidia-smi log, leading warning lines, SR-IOV virtual functions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import ParseError
from harness.probes import fio, gpu_health, lspci, nic, nvidia_smi, nvme
from harness.probes.kinds import KINDS, detect

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"
# file-name prefix -> the kind `auto` must detect
PREFIX = {
    "nvidia-smi-q-x": "nvidia-smi-xml", "nvidia-smi-query-gpu-csv": "nvidia-smi-csv",
    "nvidia-smi-q_": "nvidia-smi-text",
    "nvidia-smi-topo-m": "nvidia-smi-topo", "nvme-list-json": "nvme-list",
    "nvme-smart-log": "nvme-smart-log", "nvme-id-ctrl": "nvme-id-ctrl", "lsblk": "lsblk",
    "lspci": "lspci", "ibstat": "ibstat", "ibv_devinfo": "ibv-devinfo",
    "ethtool-i": "ethtool-i", "ethtool-m": "ethtool-m", "ethtool_": "ethtool",
    "fio-json": "fio", "gdscheck": "gdscheck", "gdsio-": "gdsio", "dcgmi-diag": "dcgmi-diag",
    "dcgmi-health": "dcgmi-health", "dcgmi-discovery": "dcgmi-discovery",
    "findmnt-P": "findmnt",
}
FILES = sorted(p.name for p in HW.iterdir() if p.name != "SOURCES.md")


smi_xml = nvidia_smi.parse_nvidia_smi_xml
smi_csv = nvidia_smi.parse_query_gpu_csv
topo = nvidia_smi.parse_topo_matrix


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def expected_kind(name: str) -> str:
    return next(kind for prefix, kind in sorted(PREFIX.items(), key=lambda kv: -len(kv[0]))
                if name.startswith(prefix))


@pytest.mark.parametrize("name", FILES)
def test_every_fixture_is_detected_and_parsed(name: str) -> None:
    found = detect(read(name))
    assert found.name == expected_kind(name)
    assert found.parse(read(name)) is not None


def test_every_fixture_has_a_sources_row() -> None:
    sources = read("SOURCES.md")
    assert all(f"| {name} |" in sources for name in FILES)


def test_every_kind_has_a_fixture_or_a_documented_sample() -> None:
    covered = {expected_kind(n) for n in FILES} | {"nvme-list-subsys", "diskstats"}
    assert {k.name for k in KINDS} <= covered


def test_nvidia_smi_xml_trusts_elements_over_attached_gpus() -> None:
    log = smi_xml(read("nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml"))
    assert (log.driver_version, log.cuda_version, log.attached_gpus) == ("535.54.03", "12.2", 4)
    assert len(log.gpus) == 1 and log.count_mismatch
    gpu = log.gpus[0]
    assert gpu.name == "NVIDIA A100-SXM4-80GB" and gpu.serial == "1650522003820"
    assert gpu.memory_bytes == 81920 * 2**20
    assert (gpu.link_width_max, gpu.link_width_current) == (16, 16)
    assert gpu.ecc_volatile_uncorrectable == 0
    assert gpu.retired_pages is None  # N/A on A100 (row remapping instead): not 0
    assert gpu.mig_enabled and len(gpu.mig_devices) == 4


def test_nvidia_smi_xml_mig_and_dtd_v13() -> None:
    mig = smi_xml(read("nvidia-smi-q-x_netdata_a100-sxm4-40gb-mig_drv510.xml"))
    gpu = mig.gpus[0]
    assert gpu.mig_enabled and [m.gpu_instance_id for m in gpu.mig_devices] == [1, 2]
    dual = smi_xml(read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml"))
    assert [g.name for g in dual.gpus] == ["NVIDIA RTX A5000"] * 2
    assert dual.gpus[0].ecc_enabled is False and dual.gpus[0].ecc_volatile_uncorrectable is None
    assert dual.gpus[0].link_gen_current == 1 and dual.gpus[0].link_width_current == 16


def test_nvidia_smi_xml_narrow_link_and_retired_pages() -> None:
    a10g = smi_xml(read("nvidia-smi-q-x_telegraf_a10g_drv515.xml")).gpus[0]
    assert (a10g.link_width_current, a10g.link_width_max) == (8, 16)
    t4 = smi_xml(read("nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml")).gpus[0]
    assert t4.retired_pages == 0 and t4.retirement_pending is False


def test_nvidia_smi_xml_garbled_names_the_line() -> None:
    text = read("nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml").replace("</serial>", "</seria>", 1)
    with pytest.raises(ParseError, match=r"line 28"):
        nvidia_smi.parse_nvidia_smi_xml(text)


def test_nvidia_smi_text_log_reads_like_the_xml() -> None:
    from harness.probes.nvidia_smi_text import parse_nvidia_smi_text

    name = "nvidia-smi-q_multilanglearning_rtx4070-laptop_drv566_wddm.txt"
    log = parse_nvidia_smi_text(read(name))
    assert (log.driver_version, log.cuda_version, log.attached_gpus) == ("566.36", "12.7", 1)
    (gpu,) = log.gpus
    assert gpu.name == "NVIDIA GeForce RTX 4070 Laptop GPU" and gpu.serial is None  # N/A
    assert gpu.pci_bus_id == "00000000:01:00.0" and gpu.memory_bytes == 8188 * 2**20
    assert (gpu.link_width_current, gpu.link_width_max, gpu.link_gen_max) == (8, 8, 4)
    assert gpu.ecc_enabled is None and gpu.ecc_volatile_uncorrectable is None
    assert gpu.remapped_rows_uncorrectable == 0 and gpu.remap_failure is False
    shifted = read(name).replace("    Product Name", "   Product Name", 1)
    with pytest.raises(ParseError, match=r"nvidia-smi -q line 10: indent of 3"):
        parse_nvidia_smi_text(shifted)


def test_query_gpu_csv_with_and_without_units() -> None:
    p100 = smi_csv(read("nvidia-smi-query-gpu-csv_netdata_tesla-p100.csv"))
    assert not read("nvidia-smi-query-gpu-csv_netdata_tesla-p100.csv").endswith("\n")
    assert p100.rows[0]["fan.speed"] is None  # [N/A]
    assert p100.value(0, "power.draw") == 28.16
    assert p100.columns[4].unit == "MiB"
    power = smi_csv(read("nvidia-smi-query-gpu-csv_pkb_power-draw-timeseries.csv"))
    assert power.value(0, "power.draw") == 16.48 and power.rows[0]["power.draw"] == "16.48 W"


def test_query_gpu_csv_short_row_names_the_line() -> None:
    with pytest.raises(ParseError, match="line 3: 1 values for 2 columns"):
        nvidia_smi.parse_query_gpu_csv("index, power.draw [W]\n0, 1 W\n1\n")


def test_topo_tabs_spaces_legend_and_empty_affinity() -> None:
    pli = topo(read(
        "nvidia-smi-topo-m_jdh4-pli_8xH100-NV18_6nic_tabs_empty-cpu-affinity.txt"))
    assert pli.devices[0].cpu_affinity is None and pli.devices[0].numa_affinity == "0"
    assert pli.devices[4].cpu_affinity == "1"
    assert len(pli.gpus()) == 8 and pli.nic_names["NIC5"] == "mlx5_5"
    spaces = topo(read("nvidia-smi-topo-m_mooncake-issue2039_8gpu-nv18_12nic.txt"))
    assert spaces.devices[0].cpu_affinity == "4,6,8,10,12"
    assert spaces.nvlinks("GPU3") == {f"GPU{i}": 18 for i in range(8) if i != 3}
    assert len(spaces.nic_names) == 12
    v100 = topo(read("nvidia-smi-topo-m_jdh4-traverse_4xV100-NV3_tabs.txt"))
    assert v100.nvlinks("GPU0") == {"GPU1": 3} and v100.devices[2].numa_affinity == "8"


def test_nvme_list_flat_nested_and_empty() -> None:
    flat = nvme.parse_nvme_list(read("nvme-list-json_netdata_v2.3.json"))
    assert [n.serial for n in flat] == ["XXX00YYY", "XXX01YYY"]  # masked upstream, kept
    nested = nvme.parse_nvme_list(read("nvme-list-json_netdata_v2.11_3x-firecuda530.json"))
    assert [n.device for n in nested] == ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"]
    assert nested[0].firmware == "SU6SM005" and nested[0].size_bytes == 4000787030016
    assert nested[0].transport == "pcie"
    assert nvme.parse_nvme_list(read("nvme-list-json_netdata_empty.json")) == []


def test_smart_log_both_shapes_and_numbers_as_strings() -> None:
    old = nvme.parse_smart_log(read("nvme-smart-log-json_netdata_v2.3.json"))
    new = nvme.parse_smart_log(read("nvme-smart-log-json_netdata_v2.11.json"))
    assert old.critical_warning == new.critical_warning == 0
    assert (old.media_errors, new.percent_used, old.temperature_c) == (0, 30, 36.9)
    stringly = read("nvme-smart-log-json_netdata_v2.3.json").replace('"media_errors": 0',
                                                                     '"media_errors": "3"')
    assert nvme.parse_smart_log(stringly).media_errors == 3


def test_id_ctrl_strips_padding() -> None:
    ctrl = nvme.parse_id_ctrl(read("nvme-id-ctrl-json_ipa_wdc-sn730.json"))
    assert (ctrl.model, ctrl.serial, ctrl.firmware) == (
        "WDC PC SN730 SDBQNTY-256G-1001", "1951B3444502", "11170101")
    assert ctrl.capacity_bytes == 256060514304


def test_list_subsys_v2_and_v1_shapes() -> None:
    """No capture of `nvme list-subsys -o json` ships here (licence); the shapes are
    nvme-cli's: 2.x a list of hosts whose Subsystems carry Paths, 1.x the Paths in the
    element after the subsystem's Name / NQN."""
    v2 = ('[{"HostNQN":"nqn.h","Subsystems":[{"Name":"nvme-subsys1","NQN":"nqn.x:vol",'
          '"IOPolicy":"numa","Paths":[{"Name":"nvme1","Transport":"tcp",'
          '"Address":"traddr=10.0.0.9,trsvcid=4420","State":"live"},{"Name":"nvme2",'
          '"Transport":"tcp","Address":"traddr=10.0.0.10,trsvcid=4420","State":"connecting"}]}]}]')
    (sub,) = nvme.parse_list_subsys(v2)
    assert sub.nqn == "nqn.x:vol" and sub.live_paths == 1 and sub.paths[0].transport == "tcp"
    v1 = ('{"Subsystems":[{"Name":"nvme-subsys0","NQN":"nqn.y"},{"Paths":[{"Name":"nvme0",'
          '"Transport":"rdma","Address":"traddr=10.1.1.1 trsvcid=4420","State":"live"}]}]}')
    assert nvme.parse_list_subsys(v1)[0].paths[0].transport == "rdma"
    assert nvme.parse_list_subsys('[{"Subsystems":[]}]') == []


def test_lsblk_children_and_absent_columns() -> None:
    devs = nvme.parse_lsblk(read("lsblk-J-o_fm_desktop-nvme-sata-luks.json"))
    disk = next(d for d in devs if d.name == "nvme0n1")
    assert [c.mountpoint for c in disk.children] == ["/boot/efi", "/"]
    assert disk.size_bytes is None  # SIZE was not a column: absent, not 0


def test_lspci_width_not_speed_and_virtual_functions() -> None:
    devs = lspci.parse_lspci(read("lspci-vvv_vc_azure-nda100v4_8xA100_cx6-ib-vf_nvme.txt"))
    gpus = [d for d in devs if d.kind == "3D controller"]
    assert len(gpus) == 8 and all(g.link_width == g.link_width_max == 16 for g in gpus)
    vfs = [d for d in devs if d.virtual_function]
    assert len(vfs) == 9 and all(v.link_width == 0 for v in vfs)
    assert not any(d.width_below_capability for d in devs)  # VFs report x0 by design
    cx7 = lspci.parse_lspci(read("lspci-vvv_doc_connectx7-mt2910-gen5x16_single-device_tabs.txt"))
    assert cx7[0].serial == "X1LM37Z004B" and cx7[0].link_speed_max_gts == 32.0


def test_lspci_downgraded_width_is_caught() -> None:
    text = read("lspci-vvv_doc_connectx7-mt2910-gen5x16_single-device_tabs.txt").replace(
        "Width x16 (ok)", "Width x8 (downgraded)")
    assert lspci.parse_lspci(text)[0].width_below_capability


def test_lspci_garbage_names_the_line() -> None:
    with pytest.raises(ParseError, match="line 2"):
        lspci.parse_lspci("03:00.0 Ethernet controller: X\nthis is not lspci\n")


def test_ibstat_and_ibv_devinfo() -> None:
    cas = nic.parse_ibstat(read("ibstat_mooncake-issue2039_cx7-ndr400-x8_cx6dx-x4.txt"))
    assert len(cas) == 12 and cas[0].firmware == "28.41.1000" and cas[0].ports[0].rate_gbps == 400
    down = [c.name for c in cas if not c.ports[0].up]
    assert len(down) == 2
    (hca,) = nic.parse_ibv_devinfo(read("ibv_devinfo_tvj-doc_cx6-mt4123-hdr_tabs.txt"))
    assert hca.firmware == "20.41.1000" and hca.ports[0].up and hca.model == "4123"


def test_ethtool_kinds() -> None:
    link = nic.parse_ethtool(read("ethtool_node-exporter_e1000e_eth0.txt"))
    assert (link.interface, link.speed_gbps, link.link_detected) == ("eth0", 1.0, True)
    drv = nic.parse_ethtool_driver(read("ethtool-i_ethq-issue8_mlx5_core_cx4lx.txt"))
    assert (drv.driver, drv.firmware) == ("mlx5_core", "14.23.1020")
    module = nic.parse_ethtool_module(read("ethtool-m_netdata_sfp-10g-lr_ddm.txt"))
    assert module.serial is None and module.vendor == "FS"  # XXXX-masked serial: absent
    assert module.rx_power_dbm == -23.57 and module.alarms_on == ()


def test_fio_3x_legacy_and_surrounding_lines() -> None:
    new = fio.parse_fio(read("fio-json_fioplot_fio-3.1_samsung-pm883_randread-qd16-nj16.json"))
    read_ = new.jobs[0].read
    assert new.version == "fio-3.1" and read_.bandwidth_bytes_s == 162750 * 1024
    assert read_.clat_percentiles_s[99.0] == pytest.approx(0.057933824)  # "99.000000": ns
    old = fio.parse_fio(read("fio-json_pkb_fio-2.17_legacy.json"))
    assert old.version == "fio-2.17" and old.jobs[0].read.clat_mean_s is not None
    assert old.jobs[0].read.io_bytes == 1294256 * 1024  # 2.x io_bytes are KiB
    wrapped = ("fio: this platform does not support process shared mutexes\n"
               + read("fio-json_pkb_fio-2.17_legacy.json") + "\nfio: file hash not empty\n")
    assert fio.parse_fio(wrapped).leading_lines == (
        "fio: this platform does not support process shared mutexes",)


def test_fio_error_run_is_kept_with_its_error() -> None:
    text = read("fio-json_pkb_fio-2.17_legacy.json").replace('"error" : 0', '"error" : 5', 1)
    assert [j.error for j in fio.parse_fio(text).failed] == [5]


def test_fio_truncated_json_names_the_line() -> None:
    text = read("fio-json_pkb_fio-2.17_legacy.json")[:400]
    with pytest.raises(ParseError, match=r"fio JSON line \d+"):
        fio.parse_fio(text)


def test_dcgmi_and_gdscheck() -> None:
    r3 = gpu_health.parse_dcgmi_diag(read("dcgmi-diag-r3-j_vc_tesla-t4.json"))
    assert not r3.failed and any(t.status == "Skip" for t in r3.tests)
    failing = read("dcgmi-diag-r1-j_vc_tesla-t4.json").replace('"status": "Pass"',
                                                               '"status": "Fail"')
    assert [t.name for t in gpu_health.parse_dcgmi_diag(failing).failed] == ["CUDA Main Library"]
    assert gpu_health.parse_dcgmi_health(read("dcgmi-health-c-j_vc.json")).overall == "Healthy"
    (gpu,) = gpu_health.parse_dcgmi_discovery(read("dcgmi-discovery-l_vc_tesla-t4.txt"))
    assert gpu.name == "Tesla T4" and gpu.uuid and gpu.uuid.startswith("GPU-934a")
    gds = gpu_health.parse_gdscheck(read("gdscheck-p_blog_8xH100_gds1.13.txt"))
    assert read("gdscheck-p_blog_8xH100_gds1.13.txt").startswith("warn: error opening log")
    assert gds.version == "1.13.0.11" and gds.supported["NVMe"] and not gds.supported["NVMeOF"]
    assert (gds.gpus, gds.gpus_supporting, gds.verified, gds.iommu_enabled) == (8, 8, True, False)


def test_unknown_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not the output of any tool"):
        detect("hello world\n")


def gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, timeout=60)


def test_gate_parse_json_auto_and_garbage(tmp_path: Path) -> None:
    out = gate("parse", "auto", str(HW / "nvme-list-json_netdata_v2.3.json"), "--json")
    assert out.returncode == 0 and '"kind": "nvme-list"' in out.stdout
    assert '"serial": "XXX00YYY"' in out.stdout
    bad = tmp_path / "garbage.txt"
    bad.write_text("Settings for eth0:\n\tSpeed: fast\n", encoding="utf-8")
    out = gate("parse", "ethtool", str(bad))
    assert out.returncode == 4 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert str(bad) in out.stderr and "line 2" in out.stderr
    listed = gate("parse", "--help")
    assert all(k.name in listed.stdout for k in KINDS)
