"""`gate run G3 --dry-run`: every phase G3 would run, with an estimated duration, and no
host touched."""

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
    if gate != "G3":
        raise UsageError(f"--dry-run is for G3 in this version, not {gate}")
    from pathlib import Path

    from rich.table import Table

    from harness.cli.common import stdout_console
    from harness.g3.plan import dry_run
    from harness.runner import check_site
    from harness.serving.cells import cells, docs_for

    loaded = open_config(config_path, overrides)
    cfg = loaded.config
    if cfg.arms is None or not cfg.layouts:
        raise UsageError("G3 needs arms and layouts", file=str(loaded.path), key="arms")
    # A plan over hosts the inventory lacks would only fail at the real run: same checks.
    check_site(gate, loaded, Path(inventory_path) if inventory_path else None)
    steps, total_min, total_max = dry_run(cfg)
    table = Table(title=f"G3 plan for {cfg.campaign.name} (minimum repetitions)")
    for col in ("#", "cell", "rep", "arm", "step", "est."):
        table.add_column(col)
    for i, s in enumerate(steps, 1):
        table.add_row(str(i), s.cell, str(s.repetition), s.arm, s.step, _hms(s.estimate_s))
    console = stdout_console()
    console.print(table)
    for override in loaded.overrides:
        click.echo(f"--set {override}")
    reps = cfg.gates.g3.repetitions
    for cell in cells(cfg):
        n = docs_for(cell.tier, cfg.workload.docs_per_concurrency, cfg.workload.min_docs)
        click.echo(f"{cell.key}: {n} documents of {cfg.workload.doc_tokens} tokens per phase, "
                   f"{reps.min}..{reps.max} ABBA pairs")
    click.echo(f"estimated: {_hms(total_min)} at {reps.min} pairs per cell, "
               f"{_hms(total_max)} at {reps.max} (estimates from gates.g3.estimate)")
    return 0
