"""Checks named for people, and --json with numbers and ISO 8601 times (issue 16)."""

from __future__ import annotations

from harness.cli.run_view import iso, number
from harness.labels import check_label


def test_cells_and_preflight_checks_read_as_people_name_them() -> None:
    assert check_label("G3", "test_g3.py::test_cell[TP8-c16]", "test_cell") == "G3 · TP8 · c=16"
    assert check_label("G3", "test_g3.py::test_cell[TP4x2-c4]", "test_cell") == \
        "G3 · TP4x2 · c=4"
    assert check_label("G3", "test_g3.py::test_arms_serve_the_same_model[TP8]",
                       "test_arms_serve_the_same_model") == \
        "G3 · TP8 · arms serve the same model"
    assert check_label("G1", "test_g1.py::test_gpu_count[gpu1]", "test_gpu_count") == \
        "G1 · gpu1 · gpu count"
    assert check_label(None, "x.py::test_plain", "test_plain") == "plain"


def test_json_numbers_and_times() -> None:
    assert number("2") == 2 and number("0.275") == 0.275 and number("1e3") == 1000.0
    assert number(">= 1") == ">= 1" and number("nan") == "nan" and number(None) is None
    assert iso(0.0) == "1970-01-01T00:00:00+00:00" and iso(None) is None

