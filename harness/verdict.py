"""Verdicts, their precedence, and the exit codes they map to (DESIGN.md 'Gate semantics')."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from harness.errors import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_PASS, EXIT_STOP_LOSS


class Verdict(StrEnum):
    PASS = "PASS"
    STOP_LOSS = "STOP-LOSS"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"

    @property
    def exit_code(self) -> int:
        return {
            Verdict.PASS: EXIT_PASS,
            Verdict.STOP_LOSS: EXIT_STOP_LOSS,
            Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE,
            Verdict.ERROR: EXIT_ERROR,
        }[self]


# First match wins: a measured failure decides even if another host erred.
PRECEDENCE = (Verdict.STOP_LOSS, Verdict.ERROR, Verdict.INCONCLUSIVE, Verdict.PASS)

SKIPPED = "SKIPPED"  # a check outcome that is not a verdict (optional items only)


def combine(outcomes: Iterable[Verdict]) -> tuple[Verdict, str]:
    """A gate's verdict from its checks; zero checks is ERROR, never PASS."""
    seen = set(outcomes)
    if not seen:
        return Verdict.ERROR, "no checks ran"
    for v in PRECEDENCE:
        if v in seen:
            return v, ""
    raise AssertionError("unreachable")  # pragma: no cover


SIGNOFF_REASON = "above band: needs sign-off"


def effective(verdict: str | None, needs_signoff: bool, reviewer_signed: bool,
              status: str = "FINISHED") -> str:
    """What a run counts as: ABORTED is ERROR; a reviewer's sign-off turns the
    above-band INCONCLUSIVE into PASS; RUNNING has no verdict yet."""
    if status == "ABORTED":
        return Verdict.ERROR.value
    if status == "RUNNING" or verdict is None:
        return "RUNNING"
    if verdict == Verdict.INCONCLUSIVE.value and needs_signoff and reviewer_signed:
        return Verdict.PASS.value
    return verdict


GATES = ("G1", "G2", "G3", "G4")
GATE_NAMES = {
    "G1": "arrival acceptance",
    "G2": "single-node baselines",
    "G3": "main gate (A/B)",
    "G4": "72 h stability",
}
