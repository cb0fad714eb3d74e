"""The table `gate demo` and `gate campaign` end with: each gate's verdict, run and
reason, and on the A/B gate's row its headline figures (harness.cli.headline), read from
the store as page 1 shows them.

Why one module: the two commands ran the same campaign and said it two ways (the demo a
table, `gate campaign` only its outcome lines); a reader of either wants the same last
word, and a narrow terminal the same layout (harness.cli.tables: the reason under its
row when it does not fit beside it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.cli.tables import Cell, Column, console, render, verdict_cell

if TYPE_CHECKING:
    from harness.campaign import CampaignStep
    from harness.store.db import Store

COLUMNS = (Column("gate", whole=True), Column("verdict", whole=True),
           Column("run", whole=True), Column("reason", weight=3, below=True))


def rows(steps: Sequence[CampaignStep], store: Store | None) -> list[list[Cell | str]]:
    """One row per registered gate: its step's verdict (FORCED marked), run and reason,
    "not run" (with why, when the campaign said) for a gate it did not run."""
    from harness.cli.headline import headline
    from harness.registry import GATES

    out: list[list[Cell | str]] = []
    by_gate = {s.gate.id: s for s in steps}
    for spec in GATES:
        step = by_gate.get(spec.id)
        if step is None or step.outcome is None:
            note = step.note if step is not None else ""
            out.append([f"{spec.id} {spec.title}", verdict_cell("not run"), "", note])
            continue
        outcome = step.outcome
        verdict = outcome.verdict.value
        figures = headline(store, outcome.run_id) if spec.compares_arms and store else ""
        reason = "\n".join(x for x in (figures, outcome.reason) if x)
        out.append([f"{spec.id} {spec.title}",
                     verdict_cell(verdict, verdict + (" (FORCED)" if step.forced else "")),
                     str(outcome.run_id), reason])
    return out


def print_table(steps: Sequence[CampaignStep], store: Store | None, title: str) -> None:
    """The table on stdout, wrapped to the terminal (never a word cut)."""
    render(console(False), COLUMNS, rows(steps, store), title=title)
