"""A check's stored English words said again in the report's language (issue 16: the
Chinese report showed preflight expected / measured in English). The inputs are what
gates/g3_main/test_g3.py stored in a `gate demo` run (run 3, `check` table)."""

from __future__ import annotations

from harness.report import checkwords
from harness.report.i18n import translator

SAME_MODEL = ("both arms serve Qwen/Qwen2.5-32B-Instruct with the same max_model_len and "
              "engine version")
DIFFER = ("the engines' argv, environment and reported config are equal, except: "
          "argv:--external-tier, argv:--tier-dir")


def test_known_checks_are_translated_with_their_values() -> None:
    en, zh = translator("en"), translator("zh")
    assert checkwords.name(zh, "test_arms_serve_the_same_model") == "两组运行同一模型"
    assert checkwords.expected(zh, "test_arms_serve_the_same_model", SAME_MODEL) == \
        "两组均运行 Qwen/Qwen2.5-32B-Instruct，且 max_model_len 与引擎版本相同"
    assert checkwords.expected(en, "test_arms_serve_the_same_model", SAME_MODEL) == SAME_MODEL
    assert checkwords.expected(zh, "test_arms_match_the_declared_layout[TP8]",
                               "tp=8, 1 instance(s) on both arms") == "两组均为 tp=8、1 个实例"
    assert checkwords.expected(zh, "test_arms_differ_only_by_the_accelerator", DIFFER) \
        .endswith("以下各项除外：argv:--external-tier, argv:--tier-dir")
    assert checkwords.measured(zh, "present") == "存在"
    assert checkwords.measured(zh, "absent; storage-side evidence allowed") == \
        "不存在；允许以存储侧证据代替"
    assert checkwords.measured(zh, "arms equal but for allowed server:x") == \
        "两组相同，仅以下允许的项不同：server:x"


def test_arm_by_arm_values_read_as_words() -> None:
    en, zh = translator("en"), translator("zh")
    raw = "{'baseline': [8], 'accelerated': [8, 4]}"
    assert checkwords.measured(en, raw) == "baseline 8; accelerated 8, 4"
    assert checkwords.measured(zh, raw) == "基线 8; 加速 8, 4"


def test_unknown_text_is_shown_as_stored() -> None:
    zh = translator("zh")
    assert checkwords.name(zh, "test_custom_thing") == "test_custom_thing"
    assert checkwords.expected(zh, "test_arms_match_the_declared_layout", "tp=8 somehow") == \
        "tp=8 somehow"
    assert checkwords.measured(zh, "{'baseline': [1, 2") == "{'baseline': [1, 2"
    assert checkwords.measured(zh, "6.84 GB/s") == "6.84 GB/s"


def test_every_gate_check_has_a_name_in_both_languages_and_english_is_the_label() -> None:
    """Every check function of the packaged suites is named in the zh report; the en
    catalogue's name is exactly the console's label words (harness/labels.py)."""
    import ast
    from pathlib import Path

    from harness.labels import check_label

    en, zh = translator("en"), translator("zh")
    gates = Path(__file__).resolve().parents[2] / "gates"
    functions = {node.name for path in gates.glob("*/test_*.py")
                 for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    assert {"test_item", "test_fio", "test_arms_serve_the_same_model"} <= functions
    for function in functions - {"test_cell"}:  # a G3 cell is named by its layout and tier
        assert checkwords.name(en, function) == check_label(None, function, function)
        assert checkwords.name(zh, function) != function, function
