"""`gate run GN`, `gate campaign`, `gate resume RUN`."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import (
    config_option,
    db_option,
    inventory_option,
    set_option,
    stderr_console,
)
from harness.cli.context import open_config, open_store
from harness.cli.progress import LiveLines, check_printer, live_progress, outcome_line

if TYPE_CHECKING:
    from harness.campaign import CampaignStep
    from harness.registry import GateSpec
    from harness.runner import RunRequest


def _gate_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from harness.errors import UsageError
    from harness.registry import gate_spec

    try:
        return gate_spec(value).id
    except UsageError as exc:
        raise click.BadParameter(exc.message + (f"; {exc.hint}" if exc.hint else "")) from None


def _sudo_password() -> str | None:
    """The password the command line took out of the environment at start."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    value = obj.get("sudo_password") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def _request(gate: str, config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
             db_url: str | None, forced: bool, trigger: str, pytest_args: tuple[str, ...] = (),
             suite: str | None = None) -> RunRequest:
    from harness.runner import RunRequest

    loaded = open_config(config_path, overrides)
    store = open_store(db_url)
    return RunRequest(gate=gate, loaded=loaded, store=store,
                      inventory_path=Path(inventory_path) if inventory_path else None,
                      forced=forced, trigger=trigger, pytest_args=pytest_args,
                      suite_dir=Path(suite) if suite else None,
                      sudo_password=_sudo_password())


def _announce(req: RunRequest, live: LiveLines | None = None) -> None:
    """The run's header on stderr (above the progress line when one is shown)."""
    from rich.markup import escape

    say = live.print if live is not None else stderr_console().print
    say(f"[bold]{req.gate}[/] {escape(req.loaded.config.campaign.name)} "
        f"({'FORCED, ' if req.forced else ''}store {escape(req.store.url)})")
    if req.loaded.overrides:
        say(escape("--set " + ", ".join(req.loaded.overrides)))


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("gate", callback=_gate_name, metavar="GATE")
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

        sys.exit(print_plan(gate, config_path, overrides, inventory_path))
    from harness.campaign import run_one

    req = _request(gate, config_path, overrides, inventory_path, db_url, force,
                   "scheduled" if scheduled else "manual", pytest_args, suite)
    _announce(req)
    if suite:
        stderr_console().print(f"custom suite {suite}: recorded on the run, never the "
                               f"gate's verdict")
    with live_progress() as live:
        outcome = run_one(req, progress=check_printer(live))
    click.echo(outcome_line(req.gate, outcome))
    _sync(req, outcome.run_id)
    sys.exit(outcome.exit_code)


def _sync(req: RunRequest, run_id: int) -> None:
    """`sync.to:` in gate.yaml: the campaign's finished runs sent on (a failure is an
    event on the run and a line here, never the run's exit code)."""
    from harness.workflow.autosync import after_run

    said = after_run(req.loaded, req.store, run_id)
    if said is not None:
        click.echo(said, err=True)  # one line: a script greps it


@click.command()
@config_option
@set_option
@inventory_option
@db_option
@click.option("--from", "start", callback=_gate_name, default=None,
              help="First gate to run (default: the campaign's first).")
@click.option("--scheduled", is_flag=True, help="Mark the runs as triggered by a schedule.")
def campaign(config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
             db_url: str | None, start: str | None, scheduled: bool) -> None:
    """Run the gates in order, stopping at the first that is not PASS."""
    from harness.campaign import run_campaign
    from harness.registry import GATES, from_gate

    start = start or GATES[0].id
    req = _request(start, config_path, overrides, inventory_path, db_url, False,
                   "scheduled" if scheduled else "manual")
    with live_progress() as live:
        steps = run_campaign(req, from_gate(start), skip_unbuilt=False,
                             events=_Shown(req, live), progress=check_printer(live))
    last = steps[-1].outcome if steps else None
    code = last.exit_code if last is not None else 0
    if code != 0:
        click.echo(f"campaign stopped at {steps[-1].gate.id}")
    sys.exit(code)


class _Shown:
    """`gate campaign`'s lines: each gate's header before it runs, its outcome after."""

    def __init__(self, req: RunRequest, live: LiveLines) -> None:
        self.req = req
        self.live = live

    def starting(self, gate: GateSpec, forced: bool) -> None:
        _announce(replace(self.req, gate=gate.id, forced=forced), self.live)

    def finished(self, step: CampaignStep) -> None:
        if step.outcome is not None:
            self.live.clear()  # stdout shares the terminal with the progress line
            click.echo(outcome_line(step.gate.id, step.outcome))
            _sync(self.req, step.outcome.run_id)


@click.command()
@click.argument("run_id", type=int)
@config_option
@set_option
@inventory_option
@db_option
def resume(run_id: int, config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
           db_url: str | None) -> None:
    """Continue an unfinished run after its last complete repetition (gates that resume:
    G3)."""
    from harness.campaign import resume_request
    from harness.runner import run_gate

    req = resume_request(open_store(db_url), run_id, open_config(config_path, overrides),
                         Path(inventory_path) if inventory_path else None,
                         sudo_password=_sudo_password())
    with live_progress() as live:
        outcome = run_gate(req, progress=check_printer(live))
    click.echo(outcome_line(req.gate, outcome))
    _sync(req, outcome.run_id)
    sys.exit(outcome.exit_code)
