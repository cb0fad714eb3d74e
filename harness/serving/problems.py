"""Why G3 cannot compare or decide, as typed values: the suite and the report sort
problems by kind, never by searching their text."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

from harness.reasons import Reason, text

# What engines and the store hand back as JSON, typed all the way down.
JSON: TypeAlias = "str | int | float | bool | list[JSON] | dict[str, JSON] | None"
JSONDict: TypeAlias = "dict[str, JSON]"


class ProblemKind(StrEnum):
    # Preflight: the arms cannot be compared (the cell is ERROR).
    MODEL = "served model differs"
    LAYOUT = "layout differs"
    ENGINES_DIFFER = "engines differ"
    ENGINES_UNVERIFIED = "engines not verified"
    # Evidence: the pair was measured but cannot decide (the cell is INCONCLUSIVE).
    CLIENT_SATURATED = "client saturated"
    REQUESTS_FAILED = "requests failed"
    LENGTH_NOT_FIXED = "output length not fixed"
    TOKENS_DISAGREE = "token counts disagree"
    COUNTERS_RESET = "counters reset"
    NOT_COLD = "restart not cold"
    NOT_EXERCISED = "accelerator not exercised"
    CONTAMINATED = "baseline contaminated"
    NOT_INSPECTED = "load not served by the engines inspected"
    CLOCKS_DISAGREE = "client and engine disagree"
    BUDGET = "time budget exhausted"


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    text: str  # the whole sentence shown to users and stored as the cell's reason
    why: Reason | None = None  # the same as a code + parameters (the report's languages)

    def __str__(self) -> str:
        return self.text


def joined(problems: list[Problem]) -> str:
    return "; ".join(p.text for p in problems)


def why(problem: Problem) -> Reason:
    """The problem as a Reason; one made without a code is said as it was written."""
    return problem.why if problem.why is not None else text(problem.text)


def not_compared(problems: list[Problem]) -> Reason:
    """"not compared: preflight found " + joined(problems), as a Reason."""
    return Reason("g3.not_compared", parts=tuple(why(p) for p in problems))
