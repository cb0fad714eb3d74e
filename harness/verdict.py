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

# What a finished run that is not a gate (`gate bench`, `gate import`) counts as: measured
# and stored, nothing decided. Not a Verdict: it maps to no exit code, opens no gate and
# is never shown as PASS. Such a run that failed outright (nothing completed) is ERROR.
RECORDED = "RECORDED"


def effective(verdict: str | None, needs_signoff: bool, reviewer_signed: bool,
              status: str = "FINISHED", kind: str | None = None) -> str:
    """What a run counts as: ABORTED is ERROR; RUNNING has no verdict yet; a finished run
    of another kind than `gate` is RECORDED, or ERROR if it failed (whatever verdict an
    older harness stored on it); a reviewer's sign-off turns a gate's above-band
    INCONCLUSIVE into PASS. kind None (not said): a finished run without a verdict is
    RECORDED, since a gate run always finishes with one."""
    if status == "ABORTED":
        return Verdict.ERROR.value
    if status == "RUNNING":
        return "RUNNING"
    if kind is not None and kind != "gate":
        return Verdict.ERROR.value if verdict == Verdict.ERROR.value else RECORDED
    if verdict is None:
        return RECORDED
    if verdict == Verdict.INCONCLUSIVE.value and needs_signoff and reviewer_signed:
        return Verdict.PASS.value
    return verdict
