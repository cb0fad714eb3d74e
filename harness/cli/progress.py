"""What a running gate prints on stderr: one line per check as it is stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.cli.common import stderr_console

if TYPE_CHECKING:  # the runner imports pytest: `gate run --help` must not
    from harness.runner import Progress, RunOutcome

COLOURS = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta"}


def check_printer() -> Progress:
    console = stderr_console()

    def show(name: str, host: str | None, verdict: str, message: str) -> None:
        from rich.markup import escape

        word = str(getattr(verdict, "value", verdict))
        where = f" [{host}]" if host else ""  # square brackets: escaped, not markup
        tail = f" - {message[:240]}" if message and word != "PASS" else ""
        console.print(f"  [{COLOURS.get(word, 'white')}]{word:>12}[/] "
                      f"{escape(name + where + tail)}", highlight=False, markup=True)

    return show


def outcome_line(gate: str, outcome: RunOutcome) -> str:
    """`G3 run 7: PASS` with its marks and reason, the line every gate run ends with."""
    marks = []
    if outcome.partial:
        marks.append("PARTIAL")
    if outcome.status == "ABORTED":
        marks.append("ABORTED")
    mark = f" ({', '.join(marks)})" if marks else ""
    reason = f": {outcome.reason}" if outcome.reason else ""
    return f"{gate} run {outcome.run_id}: {outcome.verdict.value}{mark}{reason}"
