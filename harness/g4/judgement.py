"""One G4 criterion's finding: every criterion module returns it (criteria.py, the
engines' own clock in clock_check.py, the hosts' hardware in hardware_probe.py)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.reasons import Reason
from harness.verdict import Verdict


@dataclass(frozen=True)
class Judgement:
    """`window`: the index (from 0) of the first window that missed; its words count
    windows from 1, as the progress line and the report do."""

    criterion: str  # one of CRITERIA (hardware: harness/g4/hardware.py)
    verdict: Verdict
    reason: Reason
    text: str  # the same in English
    window: int | None = None  # the first window that missed, where one did
    signoff: bool = False  # an INCONCLUSIVE a reviewer's sign-off may accept
