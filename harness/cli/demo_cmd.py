"""`gate demo`: the whole campaign against the simulated lab, report at the end."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.cli.common import set_option


@click.command()
@click.option("--out", default="gate-demo", show_default=True, type=click.Path(file_okay=False),
              help="Where the demo site, store and report are written.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("--scenario", type=click.Choice(["default", "null", "broken-baseline"]),
              default="default", show_default=True,
              help="default ends PASS; null (no gain) STOP-LOSS or INCONCLUSIVE; "
                   "broken-baseline INCONCLUSIVE 'above band: needs sign-off'.")
@click.option("--speed", type=float, default=None, help="Simulator speed factor.")
@click.option("--format", "fmt", type=click.Choice(["pdf", "html", "both"]), default="pdf",
              show_default=True)
@set_option
def demo(out: str, lang: str, scenario: str, speed: float | None, fmt: str,
         overrides: tuple[str, ...]) -> None:
    """Run the campaign against a simulated lab on this machine and render the report.

    Gates not built in this version are skipped and G3 runs FORCED (marked on the report);
    every run is flagged SIMULATED. --set applies to the gate.yaml the demo writes (a
    relative path in a value is relative to that file's directory). Exit code: G3's
    verdict (0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR), 4 for a bad --set."""
    from harness.demo import DEMO_SPEED, run_demo

    sys.exit(run_demo(Path(out), scenario, lang, speed or DEMO_SPEED, fmt, overrides))
