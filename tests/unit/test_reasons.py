"""Reasons as codes (harness/reasons.py): every code is in both catalogues with the same
placeholders, the English catalogue says exactly what the harness wrote, a stored reason
survives JSON, and anything unknown falls back to the stored English."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.config.models import Evidence
from harness.g1 import judge
from harness.g3.rules import MeasuredArm, check_evidence, length_problem
from harness.labels import check_label
from harness.reasons import CODES, Reason, from_json, text
from harness.report import reasons
from harness.report.i18n import placeholders, translator
from harness.serving.phases import PhaseTokens
from harness.serving.problems import JSONDict, Problem, ProblemKind, not_compared
from harness.stats import decide_cell, planned_looks
from harness.stats.decision import MIN_BOOT
from harness.stats.spending import look_plan
from tests.unit.test_stats_decision import SEED, cell

EN, ZH = translator("en"), translator("zh")
LOOKS = planned_looks(3, 8)
PLAN = look_plan(LOOKS, 0.95)
BOOT = MIN_BOOT  # the words, not the intervals, are under test


def test_every_code_has_an_en_and_a_zh_entry_with_its_placeholders() -> None:
    for lang in (EN, ZH):
        catalogued = {k[len("reason."):] for k in lang.messages if k.startswith("reason.")
                      and not k.startswith(("reason.criterion.", "reason.sep",
                                            "reason.soak_ended."))}
        assert catalogued == set(CODES), lang.lang
        for code, names in CODES.items():
            assert placeholders(lang.messages[f"reason.{code}"]) == names, (lang.lang, code)
    for word in ("drop", "gain"):
        assert f"reason.criterion.{word}" in ZH.messages
    for ended in ("done", "stopped", "failed", "running"):  # g4.soak_measured's {ended}
        assert f"reason.soak_ended.{ended}" in EN.messages
        assert f"reason.soak_ended.{ended}" in ZH.messages


def _en(r: Reason | None) -> str:
    assert r is not None
    stored = from_json(json.loads(json.dumps(r.as_json())))  # as the store keeps it
    assert stored == r
    return reasons.say(EN, stored)


def test_the_english_catalogue_says_what_the_decision_wrote() -> None:
    """Each kind of cell reason: the catalogue's English is the harness's, word for word."""
    cases = [cell(1, drop=0.45, gain=0.34),   # both clear
             cell(3, drop=0.5, gain=-0.1),    # below threshold
             cell(5, drop=0.45, gain=0.6)]    # above band
    seen = set()
    for base, acc in cases:
        d = decide_cell(base, acc, SEED, look=8, looks=LOOKS, seed=1, plan=PLAN, n_boot=BOOT)
        assert _en(d.why) == d.reason
        seen.add(d.why.code if d.why else "")
    base, acc = cell(4, drop=0.25, gain=0.34, sigma=0.5)
    for look in (5, 8):  # straddles: next look, then the last look
        d = decide_cell(base[:look], acc[:look], SEED, look=look, looks=LOOKS, seed=1,
                        plan=PLAN, n_boot=BOOT)
        assert _en(d.why) == d.reason
        seen.add(d.why.code if d.why else "")
    failing = cell(6, drop=0.45, gain=0.34, fail_acc=0.3)
    d = decide_cell(*failing, SEED, look=8, looks=LOOKS, seed=1, plan=PLAN, n_boot=BOOT)
    assert _en(d.why) == d.reason
    seen.add(d.why.code if d.why else "")
    assert {"cell.both_clear", "cell.below", "cell.above_band", "cell.straddles",
            "cell.rep_failed"} <= seen


@dataclass(frozen=True)
class _Arm:
    """One arm's measured phase as the evidence rules read it (harness.g3.rules)."""

    ttft: np.ndarray
    evidence: JSONDict
    saturation: str = ""

    @property
    def lengths(self) -> PhaseTokens:
        done = int(np.isfinite(self.ttft).sum())
        return PhaseTokens(64, done, done, 0)


def test_the_english_catalogue_says_what_the_evidence_rules_wrote() -> None:
    ok = np.ones(64)
    good: JSONDict = {"exposes_external": True, "external_hit_share": 0.9, "prompt_tokens": 100.0,
            "cold_restart": True}
    failed = ok.copy()
    failed[:10] = np.inf
    cold: JSONDict = {"cold_restart": True}
    pairs: list[dict[str, MeasuredArm]] = [
        {"baseline": _Arm(ok, cold, saturation="client saturated: 3 wakes late"),
         "accelerated": _Arm(ok, good)},
        {"baseline": _Arm(failed, {**cold, "first_failure": "HTTP 500"}),
         "accelerated": _Arm(ok, good)},
        {"baseline": _Arm(ok, {"cold_restart": False}), "accelerated": _Arm(ok, good)},
        {"baseline": _Arm(ok, {}), "accelerated": _Arm(ok, good)},  # not verified
        {"baseline": _Arm(ok, cold), "accelerated": _Arm(ok, {**good,
                                                              "external_hit_share": 0.1})},
        {"baseline": _Arm(ok, {**cold, "external_hit_tokens": 12.0}),
         "accelerated": _Arm(ok, good)},
        {"baseline": _Arm(ok, cold), "accelerated": _Arm(ok, {**good,
                                                              "exposes_external": False})},
        {"baseline": _Arm(ok, cold), "accelerated": _Arm(ok, {
            **good, "storage": {"bytes_read": 0.0, "hosts": 1.0}})},
    ]
    kinds = set()
    for pair in pairs:
        p = check_evidence(pair, Evidence())
        assert p is not None
        assert _en(p.why) == p.text
        kinds.add(p.kind)
    assert len(kinds) == 5
    # storage-side evidence (allowed): every reason it gives reads the same from codes
    kv = {"client_prompt_tokens": 1000.0, "kv_bytes_per_token": 1e6}  # 1 GB of KV
    storage: list[tuple[JSONDict, JSONDict]] = [
        ({"storage": {"bytes_read": 0.0, "hosts": 1.0}}, {}),
        ({"storage": {"bytes_read": 1e6, "hosts": 1.0}}, {}),
        ({"storage": {"bytes_read": 1e9, "hosts": 1.0}},
         {"storage": {"bytes_read": 5e8, "hosts": 1.0}}),
        ({"storage": {"bytes_read": 1e9, "hosts": 1.0}}, {"storage_errors": ["h: down"]}),
        ({}, {}),
        ({"store_exposes": True, "store_found": 0.0}, {}),
        ({"store_exposes": True, "store_found": 5.0, "store_hit_bytes": 1e6}, {}),
        ({"store_exposes": True, "store_found": 5.0}, {"store_found": 2.0}),
    ]
    allowed = Evidence(allow_storage_evidence=True)
    for acc, base in storage:
        p = check_evidence({"baseline": _Arm(ok, {**cold, **base}),
                            "accelerated": _Arm(ok, {**cold, **kv, **acc})}, allowed)
        assert p is not None and _en(p.why) == p.text, (acc, base)
    # the accelerator's devices against the cold KV, the engines inspected, two clocks
    counted = {**good, "external_hit_tokens": 1000.0, "kv_bytes_per_token": 1e6}
    r2: list[tuple[JSONDict, JSONDict]] = [
        ({**counted, "storage": {"bytes_read": 3e8, "hosts": 1.0}}, {}),
        ({**counted, "storage": {"bytes_read": 1e9, "hosts": 0.0}}, {}),
        ({**counted, "client_sent": 64, "client_completed": 64, "engine_requests": 3.0}, {}),
        ({**counted, "client_prompt_tokens": 900.0, "engine_prompt_tokens": 2.0}, {}),
        ({**counted, "storage": {"bytes_read": 1e9, "hosts": 1.0},
          "server_ttft_mean_s": 1.0, "client_ttft_mean_s": 1.0},
         {"server_ttft_mean_s": 1.0, "client_ttft_mean_s": 2.0}),
        ({**counted, "storage": {"bytes_read": 1e9, "hosts": 1.0},
          "server_e2e_mean_s": 1.0, "client_e2e_mean_s": 1.0},
         {"server_e2e_mean_s": 1.0, "client_e2e_mean_s": 2.0}),
    ]
    for acc, base in r2:
        p = check_evidence({"baseline": _Arm(ok, {**cold, **base}),
                            "accelerated": _Arm(ok, {**cold, **acc})}, Evidence())
        assert p is not None and _en(p.why) == p.text, (acc, base)
    short = length_problem("accelerated", PhaseTokens(64, 10, 2, 0), 0.02)
    assert short is not None and _en(short.why) == short.text


def test_a_missed_g1_item_and_its_zh_words() -> None:
    finding = judge.Finding("every GPU link at its full width", "0000:1E.0 x8/x16 gen3/3",
                            ("GPU 0000:1E.0: PCIe link x8 of x16",),
                            expected_why=Reason("g1.gpu_link_expected"),
                            problem_whys=(Reason("g1.gpu_link_narrow", {
                                "gpu": "0000:1E.0", "width": "x8", "max": "x16"}),))
    why = judge.missed("gpu1", "gpu-link", finding)
    assert _en(why) == ("gpu1 gpu-link: GPU 0000:1E.0: PCIe link x8 of x16 (expected every "
                        "GPU link at its full width; found 0000:1E.0 x8/x16 gen3/3)")
    zh = reasons.say(ZH, why)
    assert "PCIe 链路 x8，应为 x16" in zh and "每个 GPU 链路均为满宽度" in zh


def test_arm_and_criterion_words_are_translated_nested_reasons_too() -> None:
    why = Reason("cell.stop_loss", {"reason": Reason("cell.below", parts=(
        Reason("cell.estimate", {"criterion": "gain", "value": "0.001", "lo": "-0.022",
                                 "hi": "0.024", "threshold": "0.29"}),))})
    assert reasons.say(ZH, why) == ("止损 (STOP-LOSS)：低于阈值：增幅 0.001，置信区间 "
                                    "[-0.022, 0.024]，阈值 0.29")
    problems = [Problem(ProblemKind.BUDGET, "time budget exhausted", Reason("g3.budget")),
                Problem(ProblemKind.MODEL, "an old text")]  # no code: said as written
    assert reasons.say(ZH, not_compared(problems)) == "未比较：预检发现 时间预算已用完；an old text"
    assert reasons.say(ZH, Reason("g3.not_cold", {"arm": "baseline"})).startswith("基线组")


def test_unknown_or_old_reasons_fall_back_to_the_stored_english() -> None:
    assert reasons.stored(ZH, None, "as stored") == "as stored"
    assert reasons.stored(ZH, {"code": "no.such.code"}, "as stored") == "as stored"
    assert reasons.stored(ZH, {"code": "cell.below", "parts": [{"code": "nope"}]},
                          "as stored") == "as stored"
    assert reasons.stored(ZH, {"code": "text", "params": {"text": ["not", "a", "value"]}},
                          "as stored") == "as stored"
    assert reasons.stored(ZH, text("verbatim").as_json(), "x") == "verbatim"
    assert from_json("below threshold") is None


def test_a_run_reason_made_of_its_checks_is_said_in_the_report_language(tmp_path: Path) -> None:
    """The runner's "label [host]: message" of a failed check, stored with the check's
    reason code, reads in Chinese; a reason that is not that composition stays as stored."""
    from harness.report.frames import load_run
    from harness.report.sections.base import run_reason
    from harness.store import Store
    from harness.store import runs as store_runs

    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G1"))
    finding = judge.Finding("every GPU link at its full width", "x8/x16",
                            ("GPU 0000:1E.0: PCIe link x8 of x16",),
                            expected_why=Reason("g1.gpu_link_expected"),
                            problem_whys=(Reason("g1.gpu_link_narrow", {
                                "gpu": "0000:1E.0", "width": "x8", "max": "x16"}),))
    why = judge.missed("gpu1", "gpu-link", finding)
    message = _en(why)
    nodeid = "gates/g1_arrival/test_g1.py::test_health[gpu1-gpu-link]"
    store_runs.record_check(store, rid, nodeid=nodeid, name="test_health", host="gpu1",
                            outcome="STOP-LOSS", message=message,
                            details={"message": why.as_json()})
    label = check_label("G1", nodeid, "test_health")
    store_runs.finish_run(store, rid, verdict="STOP-LOSS",
                          reason=f"{label} [gpu1]: {message}")
    frames = load_run(store, rid, with_requests=False)
    zh = run_reason(frames.run, ZH, frames.checks)
    assert "PCIe 链路 x8，应为 x16" in zh and "[gpu1]：" in zh
    assert zh.startswith("G1 · gpu1 GPU 链路 · 健康检查")  # the check and its item said in zh too
    assert run_reason(frames.run, EN, frames.checks) == frames.run.reason
    partial = dataclasses.replace(frames.run, reason="PARTIAL: 1 of 9 planned checks ran")
    assert run_reason(partial, ZH, frames.checks) == "PARTIAL: 1 of 9 planned checks ran"
    store.close()


def test_lists_and_arm_by_arm_values_read_as_the_harness_writes_them() -> None:
    """`listed` joins with "; ", `comma` with ", " (the reader's own in zh); `per_arm`
    says `{'baseline': [8], 'accelerated': [8, 4]}` as words, its values already
    formatted and each arm named in the reader's language."""
    from harness.reasons import comma, listed, per_arm

    assert _en(listed(["a b", Reason("g3.budget")])) == "a b; time budget exhausted"
    assert _en(comma(["h1 -", Reason("g1.clock_offset", {"host": "h2", "offset": "+0.003"}),
                      "h3 -"])) == "h1 -, h2 +0.003 s, h3 -"
    assert reasons.say(ZH, comma(["a", "b"])) == "a，b"
    assert _en(comma(["only"])) == "only"
    arms = per_arm({"baseline": [8], "accelerated": [8, 4]})
    assert _en(arms) == "baseline 8; accelerated 8, 4"
    assert reasons.say(ZH, arms) == "基线 8；加速 8, 4"
    assert _en(per_arm({"accelerated": [None], "baseline": []})) == "accelerated ?; baseline -"
    assert _en(per_arm({})) == "-"
