"""G2's judgement of gdsio's output, on real captures (tests/fixtures/hw/gdsio-*): a
GPU-direct read against the bound; compat mode is never a GDS pass; a run that is not a
GPUD read cannot be judged (ERROR)."""

from __future__ import annotations

from pathlib import Path

from harness.g2.gdsio import judge
from harness.probes.gdsio import parse_gdsio

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"


def report(name: str):  # type: ignore[no-untyped-def]
    return parse_gdsio((HW / name).read_text(encoding="utf-8"))


def test_gpud_read_against_the_bound() -> None:
    ok = judge(report("gdsio-x0-read_onizuka-vm_quadro-p400.txt"), 1.35)
    assert ok.missed == () and not ok.error and ok.gib_s == 1.564272
    low = judge(report("gdsio-x0-read_onizuka-vm_quadro-p400.txt"), 2.0)
    assert low.missed == ("1.56 GiB/s < 2.00 GiB/s",)
    assert judge(report("gdsio-x0-read_onizuka-vm_quadro-p400.txt"), None).missed == ()


def test_compat_mode_misses_even_without_a_bound() -> None:
    verdict = judge(report("gdsio-x0-write-verify_notes_nvme_compat-mode-cufile-log.txt"), None)
    assert verdict.measured.endswith("cuFile compat mode")
    assert verdict.missed[0].startswith("cuFile fell back to compat mode")


def test_no_gpud_read_is_an_error_not_a_verdict() -> None:
    assert "not GPUD" in judge(report("gdsio-x2-read_onizuka-vm_quadro-p400_cpu-gpu.txt"),
                               1.0).error
    assert "no READ" in judge(report("gdsio-x0-write_schmaustech_nfs-rdma_l40s_1m.txt"),
                              1.0).error


def test_every_measurement_is_said_in_the_report_language() -> None:
    """gdsio's measured words as a reason code: the English catalogue says them exactly."""
    from harness.probes.findmnt import parse_findmnt
    from harness.probes.mounts import described, described_why
    from harness.reasons import Reason
    from harness.report import reasons
    from harness.report.i18n import translator

    en, zh = translator("en"), translator("zh")
    verdicts = [judge(report(name), 1.0) for name in (
        "gdsio-x0-read_onizuka-vm_quadro-p400.txt",
        "gdsio-x0-write-verify_notes_nvme_compat-mode-cufile-log.txt",
        "gdsio-x2-read_onizuka-vm_quadro-p400_cpu-gpu.txt",
        "gdsio-x0-write_schmaustech_nfs-rdma_l40s_1m.txt")]
    mount = parse_findmnt((HW / "findmnt-P_gate-build-host_ext4-root.txt").read_text())
    for v in verdicts:
        assert v.measured_why is not None
        assert reasons.say(en, v.measured_why) == v.measured
        on = Reason("g2.gdsio_on", {"measured": v.measured_why, "where": described_why(mount)})
        assert reasons.say(en, on) == f"{v.measured} on {described(mount)}"
    assert reasons.say(zh, verdicts[1].measured_why).endswith("，cuFile 兼容模式")
