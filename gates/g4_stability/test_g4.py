"""G4: the accelerated arm under a closed loop for gates.g4.duration, judged window by
window (docs/g4.md). One check says the soak ran to its end; one per criterion says what
the windows showed. The checks are listed in harness.g4.plan (expected_checks)."""

from __future__ import annotations

import pytest

from harness.errors import Inconclusive, NeedsSignoff
from harness.g4.outcome import G4Outcome
from harness.pytest_plugin import CheckRecorder
from harness.reasons import Reason
from harness.verdict import Verdict

# How the soak ended, in the words its reason says (reason.soak_ended.* in the catalogues)
ENDED = {"done": "ran to its end", "stopped": "was stopped", "failed": "failed",
         "running": "is still running"}


def test_soak(g4: G4Outcome, check: CheckRecorder) -> None:
    check.expect("the accelerated arm stable under load for gates.g4.duration",
                 Reason("g4.soak_expected"))
    if g4.error is not None:  # the soak could not be seen to its end: every window is kept
        raise g4.error
    n, of = len(g4.windows), g4.planned
    said = Reason("g4.soak_measured", {"n": n, "of": of, "ended": g4.status})
    check.measure(f"{n} of {of} windows measured; the soak {ENDED.get(g4.status, g4.status)}",
                  said)
    if g4.stopped_early:
        why = Reason("g4.soak_stopped_early", {"n": n, "of": of, "why": g4.stopped_early})
        check.explain(why)
        pytest.fail(f"the soak was stopped after {n} of {of} windows: {g4.stopped_early}",
                    pytrace=False)
    if n < of:
        check.explain(said)
        raise Inconclusive(f"only {n} of {of} windows were measured ({g4.status})")


def test_criterion(g4: G4Outcome, check: CheckRecorder, criterion: str) -> None:
    expected, words = g4.expected(criterion)
    check.expect(words, expected)
    judged = g4.judgement(criterion)
    check.measure(judged.text, judged.reason)
    if judged.verdict is Verdict.PASS:
        return
    check.explain(judged.reason)
    if judged.verdict is Verdict.STOP_LOSS:
        pytest.fail(judged.text, pytrace=False)
    if judged.signoff:
        raise NeedsSignoff(judged.text)
    raise Inconclusive(judged.text)
