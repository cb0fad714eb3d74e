"""G4's hardware criterion: readings from real captures (tests/fixtures/simhosts and hw,
SOURCES.md), and the judgement over stored readings: a counter that grows is STOP-LOSS
naming host, what and window; a source not read twice is INCONCLUSIVE unless declared;
declared sources are named, not checked."""

from __future__ import annotations

from pathlib import Path

from harness.g4.hardware import PREFIX, HostReading, hardware, read_gpu, read_nvme
from harness.verdict import Verdict

FIX = Path(__file__).resolve().parents[1] / "fixtures"
BOOT = (FIX / "simhosts" / "journalctl-k_linux-insides_ubuntu24.04_boot-start.txt").read_text()
XID = (FIX / "simhosts" / "journalctl-k_ogkm-issue1150_xid45.txt").read_text()
NO_JOURNAL = (FIX / "simhosts" / "journalctl-k-b_lab-vm_no-journal.txt").read_text()
SMI = (FIX / "hw" / "nvidia-smi-q-x_telegraf_a100-sxm4-80gb-x4_drv535.xml").read_text()
TWO_GPUS_NO_ECC = (FIX / "hw" / "nvidia-smi-q-x_telegraf_dual-a5000_v13.xml").read_text()
SMART = (FIX / "hw" / "nvme-smart-log-json_netdata_v2.11.json").read_text()
LISTED = (FIX / "hw" / "nvme-list-json_netdata_v2.11_3x-firecuda530.json").read_text()

GPU = {"xid": ["gpu1"], "ecc": ["gpu1"], "nvme": ["gpu1", "st1"]}


def test_a_gpu_hosts_journal_and_nvidia_smi_read_as_counters() -> None:
    boot = HostReading("gpu1", 0.0)
    read_gpu(boot, (BOOT, ""), (SMI, ""))
    assert boot.values["xid"] == 0 and boot.unread == {}
    assert boot.values["ecc_uncorrectable"] == 0  # the A100 reports 0
    assert boot.values["gpu_temp_c"] == 27.0
    later = HostReading("gpu1", 1.0)
    read_gpu(later, (XID, ""), (SMI, ""))
    assert later.values["xid"] == 7  # the capture's seven Xid 45 lines, on four GPUs


def test_gpus_without_an_ecc_counter_leave_ecc_unread_and_the_hottest_is_shown() -> None:
    r = HostReading("gpu2", 0.0)
    read_gpu(r, (BOOT, ""), (TWO_GPUS_NO_ECC, ""))
    assert "ecc_uncorrectable" not in r.values and "ECC off?" in r.unread["ecc"]
    assert r.values["gpu_temp_c"] == 15.0  # of 13 C and 15 C


def test_an_empty_journal_or_a_tool_that_failed_is_unread_with_why() -> None:
    r = HostReading("gpu1", 0.0)
    read_gpu(r, (NO_JOURNAL, ""), (None, "nvidia-smi -q -x exited 9: NVIDIA-SMI has failed"))
    assert "xid" not in r.values and "no kernel messages" in r.unread["xid"]
    assert r.unread["ecc"].startswith("nvidia-smi -q -x exited 9")


def test_nvme_smart_logs_sum_media_errors_and_or_warning_bits() -> None:
    r = HostReading("st1", 0.0)
    read_nvme(r, {"/dev/nvme0n1": (SMART, ""), "/dev/nvme1n1": (SMART, "")}, (LISTED, ""))
    assert (r.values["nvme_media_errors"], r.values["nvme_critical_warning"]) == (0, 0)
    assert r.values["nvme_temp_c"] == 50.9  # 324 K
    none = HostReading("st2", 0.0)
    read_nvme(none, {}, (None, "nvme list exited 127: nvme: command not found"))
    assert none.unread == {"nvme": "nvme list exited 127: nvme: command not found"}
    failed = HostReading("st3", 0.0)
    read_nvme(failed, {"/dev/nvme0n1": (None, "permission denied")}, (LISTED, ""))
    assert failed.unread["nvme"] == "/dev/nvme0n1: permission denied"


def _series(**counters: dict[str, list[tuple[float, float]]]
            ) -> dict[str, dict[str, list[tuple[float, float]]]]:
    return {PREFIX + name: by_host for name, by_host in counters.items()}


def _steady(*hosts: str) -> dict[str, list[tuple[float, float]]]:
    return {h: [(100.0, 0.0), (160.0, 0.0)] for h in hosts}


def test_a_new_xid_is_stop_loss_naming_host_and_the_window_it_was_read_in() -> None:
    series = _series(xid={"gpu1": [(100.0, 2.0), (130.0, 2.0), (145.0, 3.0)]},
                     ecc_uncorrectable=_steady("gpu1"),
                     nvme_media_errors=_steady("gpu1", "st1"),
                     nvme_critical_warning=_steady("gpu1", "st1"))
    j = hardware(series, GPU, {}, started_at=100.0, window_s=10.0, windows=6)
    assert (j.verdict, j.window, j.reason.code) == (Verdict.STOP_LOSS, 4, "g4.hardware_xid")
    assert j.text == "gpu1: 1 new Xid event(s) in the kernel journal by window 5"


def test_only_a_newly_set_warning_bit_counts_and_the_earliest_miss_is_named() -> None:
    series = _series(xid=_steady("gpu1"), ecc_uncorrectable=_steady("gpu1"),
                     nvme_media_errors={"gpu1": [(100.0, 0.0), (160.0, 0.0)],
                                        "st1": [(100.0, 5.0), (150.0, 7.0)]},
                     nvme_critical_warning={"gpu1": [(100.0, 0.0), (160.0, 0.0)],
                                            "st1": [(100.0, 4.0), (120.0, 4.0), (140.0, 5.0)]})
    j = hardware(series, GPU, {}, started_at=100.0, window_s=10.0, windows=6)
    assert j.reason.code == "g4.hardware_nvme_critical_warning"  # at 140 s, before 150 s
    assert j.reason.params == {"host": "st1", "n": 1, "window": 5}


def test_a_source_read_once_or_never_is_inconclusive_unless_declared() -> None:
    series = _series(xid={"gpu1": [(100.0, 0.0)]}, ecc_uncorrectable=_steady("gpu1"),
                     nvme_media_errors=_steady("gpu1"), nvme_critical_warning=_steady("gpu1"))
    j = hardware(series, GPU, {}, started_at=100.0, window_s=10.0, windows=6)
    assert j.verdict is Verdict.INCONCLUSIVE
    assert j.reason.params == {"what": "gpu1 xid, st1 nvme"}
    declared = {"xid": "no kernel log here", "nvme": "no smart-log here"}
    ok = hardware(series, GPU, declared, started_at=100.0, window_s=10.0, windows=6)
    assert ok.verdict is Verdict.PASS and ok.reason.code == "g4.hardware_ok_gaps"
    assert ok.text == ("no new ECC error on 1 host(s) over 2 readings; not checked: "
                       "nvme: no smart-log here; xid: no kernel log here")


def test_no_growth_anywhere_is_pass() -> None:
    series = _series(xid=_steady("gpu1"), ecc_uncorrectable=_steady("gpu1"),
                     nvme_media_errors=_steady("gpu1", "st1"),
                     nvme_critical_warning=_steady("gpu1", "st1"))
    j = hardware(series, GPU, {}, started_at=100.0, window_s=10.0, windows=6)
    assert (j.verdict, j.reason.code) == (Verdict.PASS, "g4.hardware_ok")
    assert j.text == "no new Xid, ECC, NVMe error on 2 host(s) over 2 readings"


def test_the_probe_asks_each_host_what_its_role_needs_and_skips_declared_sources() -> None:
    from harness.g4.hardware_probe import HardwareProbe
    from harness.transport import FakeResponse, FakeTransport

    def host(name: str) -> FakeTransport:
        return FakeTransport([
            FakeResponse("journalctl -k -b --no-pager", stdout=BOOT),
            FakeResponse("nvidia-smi -q -x", stdout=SMI),
            FakeResponse("nvme list -o json", stdout=LISTED),
            FakeResponse("nvme smart-log /dev/nvme* -o json", stdout=SMART)], host=name)

    gpu, storage = host("gpu1"), host("st1")
    readings = HardwareProbe({"gpu1": gpu}, {"st1": storage}).read()
    assert [(r.host, sorted(r.values), r.unread) for r in readings] == [
        ("gpu1", ["ecc_uncorrectable", "gpu_temp_c", "nvme_critical_warning",
                  "nvme_media_errors", "nvme_temp_c", "xid"], {}),
        ("st1", ["nvme_critical_warning", "nvme_media_errors", "nvme_temp_c"], {})]
    assert all(c.sudo for c in gpu.calls)  # the journal and smart-logs need root
    assert not any("journalctl" in c for c in storage.commands())  # a storage host: NVMe
    gpu2 = host("gpu2")
    (only,) = HardwareProbe({"gpu2": gpu2}, {}, frozenset({"xid", "nvme"})).read()
    assert gpu2.commands() == ["nvidia-smi -q -x"] and only.unread == {}
