"""`gate runs list|show|abort` and `gate signoff`."""

from __future__ import annotations

from typing import Any

import click

from harness.cli.common import config_option, db_option, emit_json, json_option
from harness.cli.context import gone_hint, open_config, open_store
from harness.cli.run_view import (
    marks,
    number,
    run_dict,
    shown,
    status_word,
    times,
    when,
    when_short,
)
from harness.cli.tables import Cell, Column, console, render, verdict_cell, wide_option
from harness.registry import GATE_IDS

# A gate run shows its gate, a bench or an import its kind, in one column; the status is
# said in the verdict's column only when the run is not FINISHED (RUNNING, ABORTED); the
# start to the minute, its year only when not this year's: the list fits 80 columns with
# no verdict, date or mark cut, and where the reason does not fit beside them it goes
# under its row.
LIST_COLUMNS = (Column("run", whole=True), Column("gate", whole=True),
                Column("verdict", whole=True), Column("started", whole=True),
                Column("marks"), Column("reason", weight=3, below=True))
CHECK_COLUMNS = (Column("check"), Column("host"), Column("outcome", whole=True),
                 Column("expected"), Column("measured"),
                 Column("message", weight=3, below=True))


@click.group()
def runs() -> None:
    """Run history, one run's checks, and aborting a stale run."""


@runs.command("list")
@db_option
@click.option("--campaign", default=None,
              help="Only this campaign: its name, or SITE/CAMPAIGN when two sites have one "
                   "of that name.")
@click.option("--gate", default=None, type=click.Choice(GATE_IDS))
@json_option
@wide_option
def runs_list(db_url: str | None, campaign: str | None, gate: str | None, as_json: bool,
              wide: bool) -> None:
    """Every run, oldest first."""
    from harness.store import runs as store_runs

    store = open_store(db_url, existing=True)
    rows = [run_dict(store, r) for r in store_runs.runs(store, campaign=campaign, gate=gate)]
    if as_json:
        emit_json([times(d, "started_at", "finished_at") for d in rows])
        return
    render(console(wide), LIST_COLUMNS, [
        [str(d["id"]), d["gate"] or d["kind"], _verdict(d), when_short(d["started_at"]),
         marks(d), d["reason"] or ""] for d in rows])


def _verdict(d: dict[str, Any]) -> Cell:
    """The run's effective verdict, and its status when it is not FINISHED: "RUNNING
    (stale)", "ERROR (ABORTED)"."""
    word = d["effective_verdict"] or ""
    status = status_word(d)
    text = shown(word) if status == "FINISHED" or status == word else \
        status if status.startswith(word) else f"{shown(word)} ({status})"
    return verdict_cell(word, text)


@runs.command("show")
@click.argument("run_id", type=int)
@db_option
@json_option
@wide_option
def runs_show(run_id: int, db_url: str | None, as_json: bool, wide: bool) -> None:
    """One run: its row, checks, sign-offs, and the decision settings that differ from
    the defaults."""
    from rich.markup import escape

    from harness.cli.wrap import say
    from harness.labels import check_label
    from harness.registry import gate_spec
    from harness.runner import suite_hooks
    from harness.store import runs as store_runs

    store = open_store(db_url, existing=True)
    row = store_runs.get_run(store, run_id)
    d = run_dict(store, row)
    d["checks"] = [
        {"uid": c.uid, "nodeid": c.nodeid, "name": c.name,
         "label": check_label(d["gate"], c.nodeid, c.name),
         "host": c.host, "outcome": c.outcome, "message": c.message,
         "expected": c.expected, "measured": c.measured, "stage": c.stage,
         "duration": c.duration}
        for c in store_runs.checks(store, run_id)
    ]
    d["signoffs"] = [{"role": s.role, "name": s.name, "note": s.note, "at": s.at,
                      "os_user": s.os_user, "hostname": s.hostname}
                     for s in store_runs.signoffs(store, run_id)]
    judge = suite_hooks(row.gate).deviations if row.gate and gate_spec(row.gate).built \
        else None
    settings = judge(row.config_json or {}) if judge is not None else []
    d["settings"] = [vars(x) for x in settings]
    if as_json:
        emit_json({**times(d, "started_at", "finished_at"),
                   "checks": [{**c, "expected": number(c["expected"]),
                               "measured": number(c["measured"])} for c in d["checks"]],
                   "signoffs": [times(x, "at") for x in d["signoffs"]]})
        return
    out = console(wide)
    shown_marks = marks(d)
    lines = [f"run {d['id']} {d['kind']} {d['gate'] or ''}: {shown(d['effective_verdict'])}"
             + (f" ({shown_marks})" if shown_marks else "")
             + (f" - {d['reason']}" if d["reason"] else ""), f"  uid {d['uid']}"]
    lines += [f"  decision setting {x.line()}: {x.why}" for x in settings]
    if d["process"] == "gone":
        lines.append(f"  its process is gone: {gone_hint(run_id)}")
    for line in lines:
        say(out, escape(line), 4)
    render(out, CHECK_COLUMNS, [
        [c["label"], c["host"] or "", verdict_cell(c["outcome"]), c["expected"] or "",
         c["measured"] or "", c["message"] or ""] for c in d["checks"]])
    for s in d["signoffs"]:
        who = f"{s['os_user']}@{s['hostname']}" if s["os_user"] else ""
        say(out, escape(f"signed by {s['name']} ({s['role']}{', as ' + who if who else ''}) "
                        f"{when(s['at'])}: {s['note']}"), 4)


@runs.command("abort")
@click.argument("run_id", type=int)
@config_option
@db_option
@click.option("--force", is_flag=True, help="Abort although the heartbeat is fresh (another host).")
@click.option("--keep-engines", is_flag=True,
              help="Do not stop the run's engines (when the site config is not at hand).")
@click.pass_obj
def runs_abort(obj: dict[str, Any] | None, run_id: int, config_path: str, db_url: str | None,
               force: bool, keep_engines: bool) -> None:
    """End a RUNNING run whose process is gone as ABORTED (its results are kept). For G3,
    both arms' stop actions run first and every engine the run started is stopped."""
    from pathlib import Path

    from harness.campaign import abort, needs_site_config
    from harness.errors import UsageError

    store = open_store(db_url, existing=True)
    loaded = None
    if not keep_engines and needs_site_config(store, run_id):
        if not Path(config_path).exists():
            raise UsageError(f"run {run_id}'s engines are stopped with the site config, and "
                             f"{config_path} does not exist",
                             hint="pass -c SITE.yaml, or --keep-engines to abort anyway")
        loaded = open_config(config_path)
    lines = abort(store, run_id, loaded, force=force,
                  sudo_password=(obj or {}).get("sudo_password"))
    click.echo(f"run {run_id} ABORTED; its lock is cleared and its results kept")
    for line in lines:
        click.echo(f"  {line}")


@click.command()
@click.argument("run_id", type=int)
@click.option("--by", "name", required=True, help="Who signs.")
@click.option("--role", type=click.Choice(["reviewer", "vendor", "customer"]), required=True,
              help="reviewer accepts an above-band result; vendor / customer record acceptance.")
@click.option("--note", required=True, help="Why (printed on the report).")
@db_option
def signoff(run_id: int, name: str, role: str, note: str, db_url: str | None) -> None:
    """Record a sign-off. A reviewer's sign-off accepts a G3 result above the expected
    band (INCONCLUSIVE 'above band: needs sign-off' becomes PASS, signed)."""
    from harness.campaign import sign_off

    verdict = sign_off(open_store(db_url, existing=True), run_id, role=role, name=name,
                       note=note)
    click.echo(f"run {run_id}: signed by {name} ({role}); counts as {verdict}")
