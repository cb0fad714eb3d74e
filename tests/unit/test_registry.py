"""The gate registry is the one list of gates: everything that names gates agrees with it."""

from __future__ import annotations

import pytest

from harness.config.models import Gates
from harness.errors import UsageError
from harness.registry import GATE_IDS, GATES, before, from_gate, gate_spec
from harness.report.i18n import load_catalog
from harness.report.sections import SECTIONS, builder_for
from harness.report.sections.arrival import G1_SECTION, G2_SECTION
from harness.report.sections.g3 import G3 as G3_SECTION
from harness.report.sections.g4 import G4 as G4_SECTION
from harness.report.sections.generic import GENERIC


def test_gates_are_unique_and_each_prerequisite_comes_earlier() -> None:
    assert len(set(GATE_IDS)) == len(GATE_IDS)
    for i, spec in enumerate(GATES):
        if spec.prerequisite is not None:
            assert spec.prerequisite in GATE_IDS[:i], spec.id


def test_the_config_has_one_typed_section_per_gate() -> None:
    fields = Gates.model_fields
    assert sorted(fields) == sorted(g.config_key for g in GATES)
    for spec in GATES:
        assert fields[spec.config_key].annotation is spec.config_model


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_gate_has_a_name_in_both_report_catalogs(lang: str) -> None:
    names = load_catalog(lang)
    for spec in GATES:
        assert f"gate.{spec.id}" in names, (lang, spec.id)


def test_report_sections_come_from_the_spec() -> None:
    assert {g.report_section for g in GATES} <= set(SECTIONS)
    assert builder_for("G3") is G3_SECTION
    assert builder_for("G1") is G1_SECTION and builder_for("G2") is G2_SECTION
    assert builder_for("G4") is G4_SECTION and builder_for(None) is GENERIC


def test_order_and_lookup() -> None:
    assert [g.id for g in before("G3")] == ["G1", "G2"]
    assert before("G1") == ()
    assert [g.id for g in from_gate("g3")] == ["G3", "G4"]
    assert gate_spec("g3").suite == "g3_main" and gate_spec("G3").built
    with pytest.raises(UsageError, match="'G7' is not a gate"):
        gate_spec("G7")


def test_a_gate_whose_suite_this_install_lacks_is_refused_naming_the_built_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from harness import runner

    missing = dataclasses.replace(gate_spec("G4"), suite="g9_not_shipped")
    monkeypatch.setattr(runner, "gate_spec", lambda gate: missing)
    with pytest.raises(UsageError, match="G4 has no suite in this version") as exc:
        runner.suite_path("G4")
    assert exc.value.hint is not None and "--force" in exc.value.hint


def test_every_packaged_suite_exports_its_hooks() -> None:
    """HOOKS is what generic code asks a suite (harness/suite_hooks.py); mypy holds its
    shape, this holds that each shipped suite has one and that only G4 runs shortened in a
    demo (its soak in seconds)."""
    from harness.runner import suite_hooks
    from harness.suite_hooks import SuiteHooks

    for spec in GATES:
        assert spec.built, spec.id
        assert isinstance(suite_hooks(spec.id), SuiteHooks)
    assert all(suite_hooks(g).in_demo for g in ("G1", "G2", "G3", "G4"))
    assert [g for g in ("G1", "G2", "G3", "G4") if suite_hooks(g).demo_shortened] == ["G4"]
