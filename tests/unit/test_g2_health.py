"""G2 GPU health passes only on something read (REVIEW-R3 F5, F4's G2 part): dcgmi diag
on real captures and what it must not pass, nvidia-smi's fallback on real captures."""

from __future__ import annotations

import json
from pathlib import Path

from harness.g2.health import judge_diag, judge_smi
from harness.probes.gpu_health import parse_dcgmi_diag
from harness.probes.nvidia_smi import parse_nvidia_smi_xml

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def test_real_diagnostics_pass_and_a_skipped_test_is_shown() -> None:
    r2 = judge_diag(parse_dcgmi_diag(read("dcgmi-diag-r2-j_vc_tesla-t4.json")))
    assert (r2.measured, r2.failed, r2.error, r2.undecided) == ("11 tests, 0 failed", (),
                                                                 None, None)
    r3 = judge_diag(parse_dcgmi_diag(read("dcgmi-diag-r3-j_vc_tesla-t4.json")))
    assert r3.measured == "16 tests, 0 failed, 1 skipped (EUD Test)"
    assert not r3.failed and r3.error is None and r3.undecided is None


def _with_statuses(status: str | None) -> str:
    """The real r1 capture with every result's status replaced (None: results removed)."""
    doc = json.loads(read("dcgmi-diag-r1-j_vc_tesla-t4.json"))
    for cat in doc["DCGM GPU Diagnostic"]["test_categories"]:
        for test in cat["tests"]:
            if status is None:
                test["results"] = []
            for result in test["results"]:
                result["status"] = status
    return json.dumps(doc)


def test_a_diagnostic_that_ran_nothing_is_not_a_pass() -> None:
    skipped = judge_diag(parse_dcgmi_diag(_with_statuses("Skip")))
    assert skipped.undecided is not None and "skipped every test: Denylist" in skipped.undecided
    not_run = judge_diag(parse_dcgmi_diag(_with_statuses("Not Run")))
    assert not_run.undecided is not None and "Inforom (Not Run)" in not_run.undecided
    no_result = judge_diag(parse_dcgmi_diag(_with_statuses(None)))
    assert no_result.undecided is not None and "(no result)" in no_result.undecided
    doc = json.loads(read("dcgmi-diag-r1-j_vc_tesla-t4.json"))
    doc["DCGM GPU Diagnostic"]["test_categories"] = []
    empty = judge_diag(parse_dcgmi_diag(json.dumps(doc)))
    assert empty.error == "dcgmi diag reported no test" and empty.measured == "0 tests, 0 failed"
    failed = judge_diag(parse_dcgmi_diag(_with_statuses("Fail")))
    assert len(failed.failed) == 9  # a failure is STOP-LOSS before anything else


def test_nvidia_smi_fallback_needs_a_health_field_read() -> None:
    mig = judge_smi(parse_nvidia_smi_xml(
        read("nvidia-smi-q-x_netdata_a100-sxm4-40gb-mig_drv510.xml")).gpus)
    assert mig.undecided is not None and "N/A" in mig.undecided and not mig.failed
    assert mig.measured == "1 GPUs, 0 unhealthy, 1 unreadable"
    t4 = judge_smi(parse_nvidia_smi_xml(read("nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml")).gpus)
    assert (t4.measured, t4.undecided, t4.failed) == ("1 GPUs, 0 unhealthy", None, ())
    # ECC off (no counter), but the row-remap state is read: judged on that
    a5000 = judge_smi(parse_nvidia_smi_xml(
        read("nvidia-smi-q-x_telegraf_dual-a5000_v13.xml")).gpus)
    assert (a5000.measured, a5000.undecided) == ("2 GPUs, 0 unhealthy", None)
    assert judge_smi(()).error == "nvidia-smi lists no GPU"


def test_every_verdict_is_said_in_the_report_language() -> None:
    """What G2's GPU health measured, as a reason code too: the English catalogue says
    exactly the harness's words, and the Chinese one says it in Chinese."""
    from harness.report import reasons
    from harness.report.i18n import translator

    en, zh = translator("en"), translator("zh")
    verdicts = [judge_diag(parse_dcgmi_diag(read(f"dcgmi-diag-r{n}-j_vc_tesla-t4.json")))
                for n in (2, 3)]
    verdicts += [judge_diag(parse_dcgmi_diag(_with_statuses(s))) for s in ("Not Run", "Fail")]
    verdicts += [judge_smi(parse_nvidia_smi_xml(read(name)).gpus) for name in (
        "nvidia-smi-q-x_netdata_a100-sxm4-40gb-mig_drv510.xml",
        "nvidia-smi-q-x_telegraf_dual-a5000_v13.xml")] + [judge_smi([])]  # no GPU: "0 GPUs"
    for v in verdicts:
        assert v.measured_why is not None and reasons.say(en, v.measured_why) == v.measured
        assert "项" in reasons.say(zh, v.measured_why) or "个" in reasons.say(zh, v.measured_why)
