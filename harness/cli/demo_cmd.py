"""`gate demo`: the whole campaign against the simulated lab, report at the end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import set_option
from harness.cli.verbose import transport_lines, verbose_option

if TYPE_CHECKING:
    from harness.campaign import CampaignStep
    from harness.cli.progress import LiveLines
    from harness.registry import GateSpec


class _Shown:
    """The demo's console: each gate's header before it runs (above the progress line)."""

    def __init__(self, live: LiveLines) -> None:
        self.live = live

    def starting(self, gate: GateSpec, forced: bool) -> None:
        self.live.print(f"[bold]{gate.id}[/] {gate.title}" + (" (FORCED)" if forced else ""))

    def finished(self, step: CampaignStep) -> None:
        return None


@click.command()
@click.option("--out", default="gate-demo", show_default=True, type=click.Path(file_okay=False),
              help="Where the demo site, store and report are written.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@click.option("--scenario",
              type=click.Choice(["default", "null", "broken-baseline", "bad-arrival",
                                 "soak-drift", "soak-fallback"]),
              default="default", show_default=True,
              help="default ends PASS (G4 needing only its sign-off); null (no gain) "
                   "STOP-LOSS or INCONCLUSIVE; broken-baseline INCONCLUSIVE 'above band: "
                   "needs sign-off'; bad-arrival G1 STOP-LOSS (a PCIe link below "
                   "capability), campaign stops. soak-drift and soak-fallback pass G1-G3 as "
                   "default does, then G4's engine gets a fault: its TTFT drifts up (G4 "
                   "STOP-LOSS ttft_drift), or its KV tier silently stops serving partway "
                   "(G4 STOP-LOSS engaged: no external-tier hits).")
@click.option("--speed", type=float, default=None, help="Simulator speed factor.")
@click.option("--format", "fmt", type=click.Choice(["pdf", "html", "both"]), default="pdf",
              show_default=True)
@click.option("--db", "db_url", default=None,
              help="Store URL (default: gate.db in the demo's site). GATE_DB is not read: "
                   "a demo never writes into a site's store unless told to.")
@set_option
@verbose_option
def demo(out: str, lang: str, scenario: str, speed: float | None, fmt: str,
         db_url: str | None, overrides: tuple[str, ...], verbose: bool) -> None:
    """Run the campaign against a simulated lab on this machine and render the report.

    Runs G1, G2, G3 and G4 in order, each after the one before passed, and stops at the
    first that does not PASS. G4's soak is shortened to seconds (72 h at a site), so its
    best end is INCONCLUSIVE "needs a sign-off" (a shortened soak is a weakened setting).
    Every run is flagged SIMULATED. --set applies to the gate.yaml the demo writes (a
    relative path in a value is relative to that file's directory). Exit code: the
    verdict where the campaign stopped (0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR;
    0 when G1 to G3 pass and the shortened G4 needs only its sign-off), 4 for a bad
    --set. -v shows each command the demo's hosts run (a tool answered from a capture is
    not run) and every check's whole message."""
    from rich.markup import escape

    from harness.cli.campaign_table import print_table
    from harness.cli.common import stderr_console
    from harness.cli.outputs import check_output
    from harness.cli.progress import check_printer, live_progress
    from harness.cli.wrap import say
    from harness.demo import DEMO_SPEED, run_demo
    from harness.store import Store

    err = stderr_console()
    check_output(Path(out), "--out", directory=True)
    with live_progress() as live, transport_lines(live.print, verbose):
        result = run_demo(Path(out), scenario, lang, speed or DEMO_SPEED, fmt, overrides,
                          events=_Shown(live), progress=check_printer(live, verbose),
                          say=live.print, db_url=db_url)
    if result.report_problem:
        say(err, escape(f"report: {result.report_problem}"), 4)
    # the whole reason, wrapped: it says why G3 did not pass; G3's figures as page 1's
    store = Store(result.site.db_url)
    try:
        print_table(result.steps, store, title=f"demo ({scenario}) - SIMULATED")
    finally:
        store.close()
    if result.busy:
        say(err, f"[yellow]note:[/] {escape(result.busy)}", 4)
    for path in result.reports:
        print(f"report: {path}")
    print(f"store: {result.site.db_url}")
    sys.exit(result.exit_code)
