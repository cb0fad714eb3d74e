"""`gates.gN.optional` names checks exactly: a skipped `test_gdsio[...]` is SKIPPED only
for `test_gdsio` or its own id, never for `test_gds`; an entry naming no planned check
is refused before the run (exit 4) with the closest check."""

from __future__ import annotations

import pytest

from harness.config.optional import check_optional, function_of, names, unknown
from harness.errors import ConfigError
from harness.pytest_plugin import is_optional

PLAN = ["test_fio[gpu1-nvme-seq-read]", "test_gds[gpu1]", "test_gdsio[gpu1]",
        "test_gdsio[gpu2]", "test_clocks"]


def test_a_skipped_check_is_optional_by_its_function_or_its_id_only() -> None:
    assert is_optional(("test_gdsio",), "test_gdsio[gpu1]", "test_gdsio")
    assert is_optional(("test_gdsio[gpu1]",), "test_gdsio[gpu1]", "test_gdsio")
    assert not is_optional(("test_gds",), "test_gdsio[gpu1]", "test_gdsio")  # was a substring
    assert not is_optional(("test_gdsio[gpu2]",), "test_gdsio[gpu1]", "test_gdsio")
    assert not is_optional(("gdsio",), "test_gdsio[gpu1]", "test_gdsio")
    assert is_optional(("test_clocks",), "test_clocks", "test_clocks")


def test_the_names_an_entry_may_use() -> None:
    assert function_of("test_gdsio[gpu1]") == "test_gdsio" and function_of("t") == "t"
    assert names(PLAN)[:4] == ["test_clocks", "test_fio", "test_gds", "test_gdsio"]
    assert unknown(["test_gds", "test_gdsio[gpu2]", "test_clocks"], PLAN) == []
    assert unknown(["test_gdsio[gpu3]", "gdsio", "test_gds"], PLAN) == ["test_gdsio[gpu3]",
                                                                        "gdsio"]


def test_an_unknown_entry_is_one_line_with_a_did_you_mean() -> None:
    with pytest.raises(ConfigError) as e:
        check_optional(["test_gdsio", "test_gdsoi"], PLAN, key="gates.g2.optional",
                       file="gate.yaml")
    line = e.value.one_line()
    assert e.value.exit_code == 4 and line.startswith("gate.yaml: gates.g2.optional: ")
    assert "'test_gdsoi' names no check this gate plans" in line
    assert "did you mean `test_gdsio`?" in line
    with pytest.raises(ConfigError, match="checks this gate plans: test_clocks"):
        check_optional(["zzz"], PLAN, key="gates.g2.optional")
    check_optional([], PLAN, key="gates.g2.optional")  # nothing optional: nothing to check


def test_a_check_the_suite_defines_but_this_config_does_not_plan_may_be_optional() -> None:
    """The demo and example sites declare gdsio optional; a site without gdsio configured
    plans no test_gdsio, and that entry is still no typo."""
    from harness.config.optional import check_optional
    from harness.runner import suite_functions

    functions = suite_functions("G2")
    assert "test_gdsio" in functions and "test_fio" in functions
    check_optional(["test_gdsio"], ["test_fio[gpu1-local]"], key="gates.g2.optional",
                   functions=functions)
    with pytest.raises(ConfigError, match="did you mean `test_gdsio`"):
        check_optional(["test_gdsoi"], ["test_fio[gpu1-local]"], key="gates.g2.optional",
                       functions=functions)
