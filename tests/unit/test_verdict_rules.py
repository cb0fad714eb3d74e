"""Verdict precedence and effective verdicts (DESIGN.md 'Gate semantics')."""

from __future__ import annotations

import pytest

from harness.verdict import Verdict, combine, effective

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
