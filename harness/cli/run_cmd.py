"""`gate run GN`, `gate campaign`, `gate resume RUN`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
from harness.cli.verbose import transport_lines, verbose_option
from harness.cli.wrap import echo
from harness.cli.wrap import say as wrapped

if TYPE_CHECKING:
    from harness.campaign import CampaignStep
    from harness.config.loader import LoadedConfig
    from harness.registry import GateSpec
    from harness.runner import RunOutcome, RunRequest


def _gate_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from harness.errors import UsageError
    from harness.registry import gate_spec

    try:
        return gate_spec(value).id
    except UsageError as exc:
        raise click.BadParameter(exc.message + (f"; {exc.hint}" if exc.hint else "")) from None


def _gate_ids(ctx: click.Context, param: click.Parameter,
              incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of a gate argument: the registry's gates."""
    from click.shell_completion import CompletionItem

    from harness.registry import GATES

    return [CompletionItem(g.id, help=g.title) for g in GATES
            if g.id.lower().startswith(incomplete.lower())]


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
    _host_keys(loaded, inventory_path)
    store = open_store(db_url)
    return RunRequest(gate=gate, loaded=loaded, store=store,
                      inventory_path=Path(inventory_path) if inventory_path else None,
                      forced=forced, trigger=trigger, pytest_args=pytest_args,
                      suite_dir=Path(suite) if suite else None,
                      sudo_password=_sudo_password())


def _host_keys(loaded: LoadedConfig, inventory_path: str | Path | None) -> None:
    """An SSH host with no key on record is refused before the run: one line, exit 4,
    nothing recorded (each check touching it would end ERROR on the same cause)."""
    from harness.config.inventory import load_inventory
    from harness.errors import UsageError
    from harness.transport.trust import untrusted_hosts

    known_hosts = loaded.known_hosts_path
    names = untrusted_hosts(load_inventory(inventory_path or loaded.inventory_path),
                            known_hosts)
    if names:
        raise UsageError(
            f"no SSH host key on record for {', '.join(names)}", file=str(known_hosts),
            hint="`gate hosts check` shows the key each presents: compare its fingerprint "
                 f"with the host's own, then `gate hosts trust {' '.join(names)}`")


def _announce(req: RunRequest, live: LiveLines | None = None) -> None:
    """The run's header on stderr (above the progress line when one is shown)."""
    from rich.markup import escape

    def say(markup: str) -> None:  # wrapped between words, a store's path whole
        if live is not None:
            live.print(markup, indent=4)
        else:
            wrapped(stderr_console(), markup, 4)

    say(f"[bold]{req.gate}[/] {escape(req.loaded.config.campaign.name)} "
        f"({'FORCED, ' if req.forced else ''}store {escape(req.store.url)})")
    if req.loaded.overrides:
        say(escape("--set " + ", ".join(req.loaded.overrides)))


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("gate", callback=_gate_name, metavar="GATE", shell_complete=_gate_ids)
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
@verbose_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the run's verdict and checks on stdout as JSON (the header, check "
                   "lines and progress stay on stderr).")
@click.option("--junit-xml", "junit", default=None, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run's checks as JUnit XML (as pytest's --junit-xml), "
                   "for CI systems; checked before the run starts.")
def run(gate: str, pytest_args: tuple[str, ...], config_path: str, overrides: tuple[str, ...],
        inventory_path: str | None, db_url: str | None, force: bool, scheduled: bool,
        dry_run: bool, suite: str | None, verbose: bool, as_json: bool,
        junit: Path | None) -> None:
    """Run one gate. Extra pytest arguments follow `--`: output options (-s, --tb,
    --log-level ...) and selection (`gate run G3 -- -k TP8`); a run with deselected
    checks is PARTIAL, never PASS, and never satisfies the next gate.

    -v shows each command sent to a host and every check's whole message; --json and
    --junit-xml FILE give the run to a script or a CI system.

    Exit: 0 PASS, 1 STOP-LOSS, 2 INCONCLUSIVE, 3 ERROR, 4 usage / prerequisite."""
    if dry_run and (as_json or junit):
        from harness.errors import UsageError

        raise UsageError("--dry-run runs nothing, so there is no run for --json / "
                         "--junit-xml", key="--dry-run", hint="drop one of them")
    junit = _junit_path(junit)
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
    with _preflight_refusal(), live_progress() as live, transport_lines(live.print, verbose):
        outcome = run_one(req, progress=check_printer(live, verbose))
    _ended(req, outcome, as_json, junit)
    _sync(req, outcome.run_id)
    sys.exit(outcome.exit_code)


@contextmanager
def _preflight_refusal() -> Iterator[None]:
    """A pre-flight refusal (harness/workflow/preflight.py): one `gate: error:` line per
    cause, exit 4; the run was never recorded."""
    from harness.errors import EXIT_USAGE, PreflightError

    try:
        yield
    except PreflightError as exc:
        for line in exc.lines():
            click.echo(f"gate: error: {line}", err=True)
        sys.exit(EXIT_USAGE)


def _junit_path(path: Path | None) -> Path | None:
    """--junit-xml's file, checked writable before the run (not after hours of it)."""
    if path is None:
        return None
    from harness.cli.outputs import check_output

    return check_output(path, "--junit-xml")


def _ended(req: RunRequest, outcome: RunOutcome, as_json: bool, junit: Path | None) -> None:
    """The run's last line (stdout; stderr with --json, whose stdout is the JSON alone),
    then its JSON and JUnit XML when asked."""
    echo(outcome_line(req.gate, outcome), err=as_json)  # wrapped between words
    if outcome.status == "ABORTED":
        click.echo(interrupted_hint(req.gate, outcome.run_id), err=True)
    if not (as_json or junit):
        return
    from harness.cli.common import emit_json
    from harness.cli.run_output import run_result, write_junit

    result = run_result(req.store, req.gate, outcome)
    if junit is not None:
        write_junit(junit, result)
        click.echo(f"junit xml: {junit}", err=True)
    if as_json:
        emit_json(result)


def interrupted_hint(gate: str, run_id: int) -> str:
    """What to do after Ctrl-C / SIGTERM ended a run (ABORTED, everything measured kept)."""
    from harness.registry import gate_spec

    if gate_spec(gate).resumable:
        return (f"gate: run {run_id} was interrupted; what it measured is kept: continue it "
                f"with `gate resume {run_id}`")
    return (f"gate: run {run_id} was interrupted; what it measured is kept: run it again "
            f"with `gate run {gate}`")


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
@click.option("--from", "start", callback=_gate_name, default=None, shell_complete=_gate_ids,
              help="First gate to run (default: the campaign's first).")
@click.option("--scheduled", is_flag=True, help="Mark the runs as triggered by a schedule.")
@verbose_option
def campaign(config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
             db_url: str | None, start: str | None, scheduled: bool, verbose: bool) -> None:
    """Run the gates in order, stopping at the first that is not PASS (-v: each command
    sent to a host and every check's whole message)."""
    from harness.campaign import run_campaign
    from harness.registry import GATES, from_gate

    start = start or GATES[0].id
    req = _request(start, config_path, overrides, inventory_path, db_url, False,
                   "scheduled" if scheduled else "manual")
    with _preflight_refusal(), live_progress() as live, transport_lines(live.print, verbose):
        steps = run_campaign(req, from_gate(start), skip_unbuilt=False,
                             events=_Shown(req, live), progress=check_printer(live, verbose))
    from harness.cli.campaign_table import print_table

    print_table(steps, req.store, title=f"campaign {req.loaded.config.campaign.name}")
    last = steps[-1].outcome if steps else None
    code = last.exit_code if last is not None else 0
    if code != 0:
        click.echo(f"campaign stopped at {steps[-1].gate.id}")
    if last is not None and last.status == "ABORTED":
        click.echo(interrupted_hint(steps[-1].gate.id, last.run_id), err=True)
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
            echo(outcome_line(step.gate.id, step.outcome))  # wrapped between words
            _sync(self.req, step.outcome.run_id)


@click.command()
@click.argument("run_id", type=int)
@config_option
@set_option
@inventory_option
@db_option
@verbose_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the run's verdict and checks on stdout as JSON, as `gate run`.")
@click.option("--junit-xml", "junit", default=None, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run's checks as JUnit XML, as `gate run`.")
def resume(run_id: int, config_path: str, overrides: tuple[str, ...], inventory_path: str | None,
           db_url: str | None, verbose: bool, as_json: bool, junit: Path | None) -> None:
    """Continue an unfinished run after its last complete repetition (gates that resume:
    G3, G4). -v, --json and --junit-xml as `gate run`."""
    junit = _junit_path(junit)
    from harness.campaign import resume_request
    from harness.runner import run_gate

    loaded = open_config(config_path, overrides)
    _host_keys(loaded, inventory_path)
    req = resume_request(open_store(db_url), run_id, loaded,
                         Path(inventory_path) if inventory_path else None,
                         sudo_password=_sudo_password())
    with live_progress() as live, transport_lines(live.print, verbose):
        outcome = run_gate(req, progress=check_printer(live, verbose))
    _ended(req, outcome, as_json, junit)
    _sync(req, outcome.run_id)
    sys.exit(outcome.exit_code)
