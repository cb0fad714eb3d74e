"""`gate run GATE --dry-run`: every phase the gate would run (its suite's dry_run hook),
with an estimated duration, and no host touched."""

from __future__ import annotations

import click

from harness.cli.context import open_config
from harness.errors import UsageError


def _hms(seconds: float) -> str:
    s = round(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d " if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def print_plan(gate: str, config_path: str, overrides: tuple[str, ...] = (),
               inventory_path: str | None = None) -> int:
    from pathlib import Path

    from rich.table import Table

    from harness.cli.common import stdout_console
    from harness.runner import check_site, suite_hooks

    plan = suite_hooks(gate).dry_run
    if plan is None:
        raise UsageError(f"--dry-run: {gate} has no phases to estimate in this version",
                         hint="`gate run` without --dry-run, or `gate config validate`")
    loaded = open_config(config_path, overrides)
    # A plan over hosts the inventory lacks would only fail at the real run: same checks.
    check_site(gate, loaded, Path(inventory_path) if inventory_path else None)
    dry = plan(loaded.config)
    table = Table(title=dry.title)
    for col in ("#", "cell", "rep", "arm", "step", "est."):
        table.add_column(col)
    for i, s in enumerate(dry.steps, 1):
        table.add_row(str(i), s.cell, str(s.repetition), s.arm, s.step, _hms(s.estimate_s))
    console = stdout_console()
    console.print(table)
    for override in loaded.overrides:
        click.echo(f"--set {override}")
    for note in dry.notes:
        click.echo(note)
    click.echo(f"estimated: {_hms(dry.total_min_s)} at {dry.at_min}, "
               f"{_hms(dry.total_max_s)} at {dry.at_max} (estimates from {dry.basis})")
    return 0
