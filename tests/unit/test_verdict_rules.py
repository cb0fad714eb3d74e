"""Verdict precedence and effective verdicts (DESIGN.md 'Gate semantics')."""

from __future__ import annotations

import pytest

from harness.verdict import RECORDED, Verdict, combine, effective

P, S, INC, E = Verdict.PASS, Verdict.STOP_LOSS, Verdict.INCONCLUSIVE, Verdict.ERROR


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        ([P, P], P),
        ([P, S, E, INC], S),  # a measured failure decides even if another host erred
        ([P, E, INC], E),
        ([P, INC], INC),
        ([INC], INC),
    ],
)
def test_first_match_wins(outcomes: list[Verdict], expected: Verdict) -> None:
    assert combine(outcomes)[0] is expected


def test_zero_checks_is_error_never_pass() -> None:
    assert combine([]) == (E, "no checks ran")


def test_exit_codes() -> None:
    assert [v.exit_code for v in (P, S, INC, E)] == [0, 1, 2, 3]


def test_signoff_turns_above_band_into_pass_only_for_reviewer() -> None:
    assert effective("INCONCLUSIVE", True, True) == "PASS"
    assert effective("INCONCLUSIVE", True, False) == "INCONCLUSIVE"
    assert effective("INCONCLUSIVE", False, True) == "INCONCLUSIVE"  # not a band question
    assert effective("STOP-LOSS", True, True) == "STOP-LOSS"


def test_aborted_is_error_and_running_has_no_verdict() -> None:
    assert effective("PASS", False, False, status="ABORTED") == "ERROR"
    assert effective(None, False, False, status="RUNNING") == "RUNNING"


@pytest.mark.parametrize("kind", ["bench", "import"])
def test_a_run_that_is_not_a_gate_is_recorded_never_a_verdict(kind: str) -> None:
    assert effective(None, False, False, kind=kind) == RECORDED
    for stored in ("PASS", "INCONCLUSIVE", "STOP-LOSS"):  # what older harnesses stored
        assert effective(stored, True, True, kind=kind) == RECORDED
    assert effective("ERROR", False, False, kind=kind) == "ERROR"
    assert effective(None, False, False, status="ABORTED", kind=kind) == "ERROR"
    assert effective(None, False, False, status="RUNNING", kind=kind) == "RUNNING"


def test_gate_runs_are_unchanged_by_the_kind() -> None:
    for stored in ("PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR"):
        assert effective(stored, False, False, kind="gate") == stored
    assert effective("INCONCLUSIVE", True, True, kind="gate") == "PASS"


def test_a_finished_run_without_a_verdict_is_recorded_when_the_kind_is_not_said() -> None:
    assert effective(None, False, False) == RECORDED
    assert RECORDED not in {v.value for v in Verdict}
