"""A check's words in the report's language (issue 16: the Chinese report showed G3's
preflight expected / measured in English; issue 25: no English is parsed back). A check
row says its stored reason codes; a row without them (a run stored before codes, a
custom suite) shows its stored words as they are, marked as such in a Chinese report.
The English inputs are what gates/g3_main/test_g3.py stores in a `gate demo` run."""

from __future__ import annotations

from types import SimpleNamespace

from harness.reasons import Reason, per_arm
from harness.report import checkwords
from harness.report.i18n import translator
from harness.report.sections.base import expected_words, measured_words, message_words

SAME_MODEL = ("both arms serve Qwen/Qwen2.5-32B-Instruct with the same max_model_len and "
              "engine version")
LAYOUT = ("tp=8, 1 instance(s) on both arms, within the GPUs G1 found on each host (else "
          "its BOM's)")
ARMS = {"baseline": [8], "accelerated": [8, 4]}
EN, ZH = translator("en"), translator("zh")


def row(name: str, expected: str = "", measured: str = "", message: str = "",
        why: dict[str, object] | None = None) -> SimpleNamespace:
    """A stored check row as the report reads it (harness.report.frames): `why` its
    details, the reasons stored beside the words (by column)."""
    return SimpleNamespace(name=name, nodeid=f"gates/x.py::{name}", expected=expected,
                           measured=measured, message=message,
                           details={k: r.as_json() if isinstance(r, Reason) else r
                                    for k, r in (why or {}).items()})


def test_stored_codes_are_said_in_the_report_language() -> None:
    c = row("test_arms_serve_the_same_model", SAME_MODEL, str(ARMS), why={
        "expected": Reason("g3.same_model_expected", {"model": "Qwen/Qwen2.5-32B-Instruct"}),
        "measured": per_arm(ARMS)})
    assert checkwords.name(ZH, "test_arms_serve_the_same_model") == "两组运行同一模型"
    assert expected_words(c, ZH) == \
        "两组均运行 Qwen/Qwen2.5-32B-Instruct，且 max_model_len 与引擎版本相同"
    assert expected_words(c, EN) == SAME_MODEL
    assert measured_words(c, ZH) == "基线 8；加速 8, 4"  # an arm's name is a word, not data
    assert measured_words(c, EN) == "baseline 8; accelerated 8, 4"
    layout = row("test_arms_match_the_declared_layout", LAYOUT,
                 why={"expected": Reason("g3.layout_expected", {"tp": 8, "n": 1})})
    assert expected_words(layout, EN) == LAYOUT
    assert expected_words(layout, ZH).startswith("两组均为 tp=8、1 个实例")
    exposes = row("test_accelerated_arm_exposes_external_cache",
                  measured="absent; storage-side evidence allowed",
                  why={"measured": Reason("g3.absent_storage_ok")})
    assert measured_words(exposes, ZH) == "不存在；允许以存储侧证据代替"


def test_a_row_without_codes_is_shown_as_stored_and_marked_in_chinese() -> None:
    """No English is read back: an old row's words are shown as they are, marked in a
    report that is not English, never in an English one; an empty cell stays "—"."""
    old = row("test_arms_match_the_declared_layout", "tp=8, 1 instance(s) on both arms",
              "{'baseline': [8], 'accelerated': [8]}", "arms are not comparable: x")
    assert expected_words(old, ZH) == "tp=8, 1 instance(s) on both arms（原文）"
    assert measured_words(old, ZH) == "{'baseline': [8], 'accelerated': [8]}（原文）"
    assert message_words(old, ZH) == "arms are not comparable: x（原文）"
    assert expected_words(old, EN) == "tp=8, 1 instance(s) on both arms"
    assert measured_words(old, EN) == "{'baseline': [8], 'accelerated': [8]}"
    blank = row("test_custom_thing")
    assert (expected_words(blank, ZH), measured_words(blank, ZH)) == ("—", "—")
    newer = row("test_custom_thing", measured="6.84 GB/s",
                why={"measured": {"code": "no.such.code"}})  # a code this harness lacks
    assert measured_words(newer, ZH) == "6.84 GB/s（原文）"
    assert checkwords.name(ZH, "test_custom_thing") == "test_custom_thing"


def test_every_gate_check_has_a_name_in_both_languages_and_english_is_the_label() -> None:
    """Every check function of the packaged suites is named in the zh report; the en
    catalogue's name is exactly the console's label words (harness/labels.py)."""
    import ast
    from pathlib import Path

    from harness.labels import check_label

    gates = Path(__file__).resolve().parents[2] / "gates"
    functions = {node.name for path in gates.glob("*/test_*.py")
                 for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    assert {"test_item", "test_fio", "test_arms_serve_the_same_model"} <= functions
    for function in functions - {"test_cell"}:  # a G3 cell is named by its layout and tier
        assert checkwords.name(EN, function) == check_label(None, function, function)
        assert checkwords.name(ZH, function) != function, function


def test_every_expect_and_measure_of_the_packaged_suites_gives_a_reason() -> None:
    """Each `check.expect` / `check.measure` in gates/*/test_*.py passes its words as a
    reason code too: a call without one would reach a Chinese report in English."""
    import ast
    from pathlib import Path

    gates = Path(__file__).resolve().parents[2] / "gates"
    calls = [(path.name, node.lineno, len(node.args) + len(node.keywords))
             for path in gates.glob("*/test_*.py") for node in ast.walk(ast.parse(
                 path.read_text())) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr in ("expect", "measure")
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "check"]
    assert len(calls) > 20
    assert [c for c in calls if c[2] < 2] == []
