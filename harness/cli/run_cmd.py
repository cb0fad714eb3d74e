"""`gate run GN`, `gate campaign`, `gate resume RUN`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from harness.cli.common import (
    config_option,
    db_option,
    inventory_option,
    set_option,
    stderr_console,
)
from harness.cli.context import open_config, open_store


def _gate_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    upper = value.upper()
    if upper not in ("G1", "G2", "G3", "G4"):
        raise click.BadParameter(f"{value!r} is not a gate; one of G1, G2, G3, G4")
    return upper



def _progress_printer() -> Any:
    console = stderr_console()
    colours = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta"}

    def show(name: str, host: str | None, verdict: Any, message: str) -> None:
        word = getattr(verdict, "value", verdict)
        where = f" [{host}]" if host else ""
        tail = f" - {message[:160]}" if message and word != "PASS" else ""
        console.print(f"  [{colours.get(word, 'white')}]{word:>12}[/] {name}{where}{tail}",
                      highlight=False, markup=True)

    return show


def _print_outcome(gate: str, outcome: Any) -> None:
    marks = []
    if outcome.partial:
        marks.append("PARTIAL")
    if outcome.status == "ABORTED":
        marks.append("ABORTED")
    mark = f" ({', '.join(marks)})" if marks else ""
    reason = f": {outcome.reason}" if outcome.reason else ""
    click.echo(f"{gate} run {outcome.run_id}: {outcome.verdict.value}{mark}{reason}")


def _sudo_password() -> str | None:
    """The password the command line took out of the environment at start."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    value = obj.get("sudo_password") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def execute_gate(gate: str, config_path: str, inventory_path: str | None, db_url: str | None,
                 forced: bool, trigger: str, pytest_args: tuple[str, ...],
                 suite: str | None = None, dry_run: bool = False,
                 overrides: tuple[str, ...] = ()) -> int:
    from harness.runner import RunRequest, run_gate

    loaded = open_config(config_path, overrides)
    store = open_store(db_url)
    req = RunRequest(gate=gate.upper(), loaded=loaded, store=store,
                     inventory_path=Path(inventory_path) if inventory_path else None,
                     forced=forced, trigger=trigger, pytest_args=pytest_args,
                     suite_dir=Path(suite) if suite else None, dry_run=dry_run,
                     sudo_password=_sudo_password())
    stderr_console().print(f"[bold]{req.gate}[/] {loaded.config.campaign.name} "
                           f"({'FORCED, ' if forced else ''}store {store.url})")
    if loaded.overrides:
        stderr_console().print("--set " + ", ".join(loaded.overrides), markup=False)
    if suite:
        stderr_console().print(f"custom suite {suite}: recorded on the run, never the "
                               f"gate's verdict")
    outcome = run_gate(req, progress=_progress_printer())
    _print_outcome(req.gate, outcome)
    return outcome.exit_code


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("gate", callback=_gate_name, metavar="G1|G2|G3|G4")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
@config_option
@set_option
@inventory_option
@db_option
@click.option("--force", is_flag=True,
              help="Run although an earlier gate has not passed (recorded as FORCED).")
@click.option("--scheduled", is_flag=True, help="Mark the run as triggered by a schedule.")
@click.option("--dry-run", is_flag=True,
              help="Print the phases and an estimated duration; touch no host (G3).")
@click.option("--suite", hidden=True, default=None,
              help="Run another suite dir as this gate (tests).")
def run(gate: str, pytest_args: tuple[str, ...], config_path: str, overrides: tuple[str, ...],
        inventory_path: str | None, db_url: str | None, force: bool, scheduled: bool,
        dry_run: bool, suite: str | None) -> None:
    """Run one gate. Extra pytest arguments follow `--`: output options (-v, -s, --tb,
    --log-level ...) and selection (`gate run G3 -- -k TP8`); a run with deselected
    checks is PARTIAL, never PASS, and never satisfies the next gate.

    Exit: 0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR, 4 usage / prerequisite."""
    if dry_run:
        from harness.cli.dry_run import print_plan

        sys.exit(print_plan(gate.upper(), config_path, overrides))
    sys.exit(execute_gate(gate, config_path, inventory_path, db_url, force,
                          "scheduled" if scheduled else "manual", pytest_args, suite,
                          overrides=overrides))


@click.command()
@config_option
@set_option
@inventory_option
@db_option
@click.option("--from", "start", callback=_gate_name, default="G1", show_default=True,
              help="First gate to run.")
@click.option("--scheduled", is_flag=True, help="Mark the runs as triggered by a schedule.")
def campaign(config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
             db_url: str | None, start: str, scheduled: bool) -> None:
    """Run the gates in order, stopping at the first that is not PASS."""
    from harness.verdict import GATES

    code = 0
    for gate in GATES[GATES.index(start.upper()):]:
        code = execute_gate(gate, config_path, inventory_path, db_url, False,
                            "scheduled" if scheduled else "manual", (), overrides=overrides)
        if code != 0:
            click.echo(f"campaign stopped at {gate}")
            break
    sys.exit(code)


@click.command()
@click.argument("run_id", type=int)
@config_option
@set_option
@inventory_option
@db_option
def resume(run_id: int, config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
           db_url: str | None) -> None:
    """Continue an unfinished run after its last complete repetition (G3)."""
    from harness.errors import UsageError
    from harness.runner import RunRequest, run_gate
    from harness.store import runs as store_runs

    store = open_store(db_url)
    row = store_runs.get_run(store, run_id)
    if row.status == "FINISHED":
        raise UsageError(f"run {run_id} is finished ({row.verdict}); nothing to resume")
    if row.gate != "G3":
        raise UsageError(f"run {run_id} is {row.gate}; only G3 runs resume in this version")
    loaded = open_config(config_path, overrides)
    if loaded.digest() != row.config_hash:
        given = ", ".join(f"--set {o}" for o in loaded.overrides) or "no --set"
        raise UsageError(f"the config and --set overrides differ from the ones run {run_id} "
                         f"started with (given now: {given})", file=str(loaded.path),
                         hint="resume with the same gate.yaml and the same --set options")
    from harness.config.inventory import load_inventory

    inventory = load_inventory(Path(inventory_path) if inventory_path else
                               loaded.inventory_path)
    if sorted(inventory.hosts) != sorted(row.hosts):
        raise UsageError(f"the inventory's hosts differ from run {run_id}'s",
                         file=str(inventory.path), hint="resume with the same inventory")
    if row.status == "RUNNING":
        store_runs.abort_run(store, run_id)  # refuses while its process is alive
    store_runs.reopen_run(store, run_id)
    req = RunRequest(gate="G3", loaded=loaded, store=store,
                     inventory_path=Path(inventory_path) if inventory_path else None,
                     forced=row.forced, resume_run=run_id, sudo_password=_sudo_password())
    outcome = run_gate(req, progress=_progress_printer())
    _print_outcome("G3", outcome)
    sys.exit(outcome.exit_code)
