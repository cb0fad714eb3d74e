"""`gate status`, `gate runs list|show|abort`, `gate signoff`."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from harness.cli.common import config_option, db_option, emit_json, json_option, stdout_console
from harness.cli.context import campaign_name, gone_hint, open_config, open_store
from harness.registry import GATE_IDS

COLOURS = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta",
           "RUNNING": "cyan", "RECORDED": "blue"}


def _shown(token: str) -> str:
    """A verdict as the tables print it; RECORDED (a bench / import: nothing decided) is
    not a verdict, so it is written in lower case."""
    from harness.verdict import RECORDED

    return token.lower() if token == RECORDED else token


def _when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else ""


def iso(t: float | str | None) -> str | None:
    """An epoch time as ISO 8601 with its UTC offset, for --json (a float of seconds
    means nothing to a reader or a spreadsheet)."""
    if not isinstance(t, int | float):
        return t
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds")


def number(text: object) -> object:
    """A stored text that is one number, as that number (--json: numbers as numbers);
    anything else unchanged."""
    if not isinstance(text, str):
        return text
    try:
        value = float(text)
    except ValueError:
        return text
    if value != value or value in (float("inf"), float("-inf")):
        return text  # NaN / inf are not JSON
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() \
        else value


def _times(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {**d, **{k: iso(d.get(k)) for k in keys}}


def _campaign_or_fail(name: str | None, explicit: str | None, store: Any) -> str:
    """`name` (from --campaign or the config), checked against the store; else the store's
    only campaign."""
    from harness.errors import UsageError
    from harness.store import runs as store_runs

    names = store_runs.campaign_names(store)
    if name and explicit and name not in names:  # a typo must not list empty gates, exit 0
        from harness.errors import NotFoundError

        raise NotFoundError(f"no campaign {name!r} in {store.url}"
                            + (f" (campaigns here: {', '.join(names)})" if names else ""),
                            what="campaign", name=name)
    if name:
        return name
    if len(names) == 1:
        return names[0]
    raise UsageError("which campaign?", hint="pass --campaign NAME or -c gate.yaml"
                     + (f"; campaigns in the store: {', '.join(names)}" if names else ""))


def _run_dict(store: Any, row: Any) -> dict[str, Any]:
    from harness.store import runs as store_runs

    return {
        "id": row.id, "kind": row.kind, "gate": row.gate, "status": row.status,
        "verdict": row.verdict, "effective_verdict": store_runs.effective_verdict(store, row),
        "reason": row.reason, "partial": row.partial, "checks_selected": row.checks_selected,
        "checks_total": row.checks_total, "forced": row.forced, "simulated": row.simulated,
        "needs_signoff": row.needs_signoff, "trigger": row.trigger, "operator": row.operator,
        "started_at": row.started_at, "finished_at": row.finished_at,
        "harness_version": row.harness_version, "config_hash": row.config_hash,
        "suite": row.suite or None, "process": store_runs.liveness(row) or None,
    }


def _marks(d: dict[str, Any]) -> str:
    marks = [m for m, on in (("FORCED", d["forced"]), ("SIMULATED", d["simulated"]),
                             ("PARTIAL", d["partial"]), ("custom suite", d.get("suite")))
             if on]
    if d.get("process") == "gone":
        marks.append("process gone")
    if d["needs_signoff"] and d["effective_verdict"] == "PASS":
        marks.append("signed")
    elif d["needs_signoff"]:
        marks.append("needs sign-off")
    return ", ".join(marks)


@click.command()
@config_option
@db_option
@click.option("--campaign", "campaign", default=None, help="Campaign name (default: the config's).")
@json_option
def status(config_path: str, db_url: str | None, campaign: str | None, as_json: bool) -> None:
    """Each gate's latest verdict, date and marks for the campaign."""
    from rich.table import Table

    from harness.campaign import gate_states
    from harness.registry import gate_spec
    from harness.store import runs as store_runs
    from harness.store.db import absent_file

    configured = campaign_name(config_path, campaign)  # a bad config first, then the store
    # A site's config before its first run: every gate "not run", from an empty store in
    # memory rather than a new gate.db left in the current directory.
    fresh = configured is not None and campaign is None and absent_file(db_url) is not None
    store = open_store("sqlite://" if fresh else db_url, existing=True)
    name = _campaign_or_fail(configured, campaign, store)
    states = gate_states(store, name)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for st in states:
        d = _run_dict(store, st.run) if st.run else None
        attempts = [_attempt(store, r) for r in store_runs.runs(store, campaign=name,
                                                                 gate=st.gate, kind="gate")
                    if not r.suite]
        running = st.latest_any if st.latest_any and st.latest_any.status == "RUNNING" \
            else None
        if running is not None and store_runs.liveness(running) == "gone":
            notes.append(f"{st.gate} run {running.id} is RUNNING but its process "
                         f"(pid {running.pid}) is gone: {gone_hint(running.id)}")
        rows.append({"gate": st.gate, "name": gate_spec(st.gate).title, "verdict": st.verdict,
                     "run": d["id"] if d else None, "date": d["finished_at"] if d else None,
                     "forced": bool(d and d["forced"]), "marks": _marks(d) if d else "",
                     "running": store_runs.liveness(running) or "alive" if running else "",
                     "running_run": running.id if running else None, "attempts": attempts})
    if as_json:
        emit_json({"campaign": name, "notes": notes, "gates": [
            {**_times(r, "date"), "attempts": [_times(a, "date") for a in r["attempts"]]}
            for r in rows]})
        return
    table = Table(title=f"campaign {name}")
    for col in ("gate", "", "verdict", "run", "date", "marks", "attempts"):
        table.add_column(col)
    for r in rows:
        verdict = str(r["verdict"])
        state = r["running"]
        marks = str(r["marks"]) + (
            f" (run {r['running_run']} is stale: see below)" if state == "gone"
            else " (a run is in progress)" if state else "")
        date = r["date"]
        table.add_row(str(r["gate"]), str(r["name"]),
                      f"[{COLOURS.get(verdict, 'white')}]{verdict}[/]", str(r["run"] or ""),
                      _when(date if isinstance(date, float) else None), marks,
                      _attempts_text(r["attempts"]))
    console = stdout_console()
    console.print(table)
    for note in notes:
        console.print(note, markup=False, highlight=False, soft_wrap=True)


def _attempt(store: Any, row: Any) -> dict[str, Any]:
    """One attempt of a gate, as `gate status` lists every one (rerunning until a PASS
    shows: each attempt is another chance of a wrong PASS)."""
    from harness.store import runs as store_runs

    return {"run": row.id, "verdict": store_runs.effective_verdict(store, row),
            "status": row.status, "date": row.finished_at or row.started_at,
            "forced": row.forced, "partial": row.partial}


def _attempts_text(attempts: list[dict[str, Any]]) -> str:
    words = []
    for a in attempts:
        flags = "".join(f" {m}" for m, on in (("forced", a["forced"]),
                                               ("partial", a["partial"])) if on)
        words.append(f"#{a['run']} {a['verdict']}{flags}")
    return f"{len(attempts)}: " + ", ".join(words) if attempts else ""


@click.group()
def runs() -> None:
    """Run history, one run's checks, and aborting a stale run."""


def _status(d: dict[str, Any]) -> str:
    """RUNNING with its process gone is stale: say so where the status is read."""
    return "RUNNING (stale)" if d.get("process") == "gone" else str(d["status"])


@runs.command("list")
@db_option
@click.option("--campaign", default=None)
@click.option("--gate", default=None, type=click.Choice(GATE_IDS))
@json_option
def runs_list(db_url: str | None, campaign: str | None, gate: str | None, as_json: bool) -> None:
    """Every run, oldest first."""
    from rich.table import Table

    from harness.store import runs as store_runs

    store = open_store(db_url, existing=True)
    rows = [_run_dict(store, r) for r in store_runs.runs(store, campaign=campaign, gate=gate)]
    if as_json:
        emit_json([_times(d, "started_at", "finished_at") for d in rows])
        return
    table = Table()
    for col in ("run", "kind", "gate", "status", "verdict", "started", "marks", "reason"):
        table.add_column(col)
    for d in rows:
        v = d["effective_verdict"] or ""
        table.add_row(str(d["id"]), d["kind"], d["gate"] or "", _status(d),
                      f"[{COLOURS.get(v, 'white')}]{_shown(v)}[/]", _when(d["started_at"]),
                      _marks(d), (d["reason"] or "")[:60])
    stdout_console().print(table)


@runs.command("show")
@click.argument("run_id", type=int)
@db_option
@json_option
@click.option("--wide", is_flag=True,
              help="Whole messages on one line each (default: wrapped to the terminal).")
def runs_show(run_id: int, db_url: str | None, as_json: bool, wide: bool) -> None:
    """One run: its row, checks, sign-offs, and the decision settings that differ from
    the defaults."""
    from rich.markup import escape
    from rich.table import Table

    from harness.config.decision import deviations
    from harness.labels import check_label
    from harness.store import runs as store_runs

    store = open_store(db_url, existing=True)
    d = _run_dict(store, store_runs.get_run(store, run_id))
    d["uid"] = store_runs.get_run(store, run_id).uid  # unique across stores and sites
    d["checks"] = [
        {"nodeid": c.nodeid, "name": c.name, "label": check_label(d["gate"], c.nodeid, c.name),
         "host": c.host, "outcome": c.outcome, "message": c.message,
         "expected": c.expected, "measured": c.measured, "stage": c.stage,
         "duration": c.duration}
        for c in store_runs.checks(store, run_id)
    ]
    d["signoffs"] = [{"role": s.role, "name": s.name, "note": s.note, "at": s.at,
                      "os_user": s.os_user, "hostname": s.hostname}
                     for s in store_runs.signoffs(store, run_id)]
    row = store_runs.get_run(store, run_id)
    d["settings"] = [vars(x) for x in deviations(row.config_json or {})] \
        if row.gate == "G3" else []
    if as_json:
        emit_json({**_times(d, "started_at", "finished_at"),
                   "checks": [{**c, "expected": number(c["expected"]),
                               "measured": number(c["measured"])} for c in d["checks"]],
                   "signoffs": [_times(x, "at") for x in d["signoffs"]]})
        return
    console = stdout_console() if not wide else _wide_console()
    marks = _marks(d)
    console.print(f"run {d['id']} {d['kind']} {d['gate'] or ''}: "
                  f"{_shown(d['effective_verdict'])}"
                  + (f" ({marks})" if marks else "") + (f" - {d['reason']}" if d["reason"] else ""),
                  highlight=False, markup=False)
    console.print(f"  uid {d['uid']}", highlight=False, markup=False)
    for x in deviations(row.config_json or {}) if row.gate == "G3" else []:
        console.print(f"  decision setting {x.line()}: {x.why}", highlight=False,
                      markup=False)
    if d["process"] == "gone":
        console.print(f"  its process is gone: {gone_hint(run_id)}",
                      highlight=False, markup=False)
    table = Table()
    # A verdict is never cut ("INCONCLU…"); the message wraps to the terminal's width.
    table.add_column("check", overflow="fold")
    table.add_column("host", overflow="fold")
    table.add_column("outcome", no_wrap=True, min_width=len("INCONCLUSIVE"))
    table.add_column("expected", overflow="fold")
    table.add_column("measured", overflow="fold")
    table.add_column("message", overflow="fold", ratio=1)
    for c in d["checks"]:
        colour = COLOURS.get(c["outcome"], "white")
        table.add_row(escape(c["label"]), escape(c["host"] or ""),
                      f"[{colour}]{c['outcome']}[/]", escape(c["expected"] or ""),
                      escape(c["measured"] or ""), escape(c["message"] or ""))
    console.print(table)
    for s in d["signoffs"]:
        who = f"{s['os_user']}@{s['hostname']}" if s["os_user"] else ""
        console.print(f"signed by {s['name']} ({s['role']}{', as ' + who if who else ''}) "
                      f"{_when(s['at'])}: {s['note']}", markup=False)


def _wide_console() -> Any:
    """--wide: as wide as the longest line needs, for a pager or a file."""
    from rich.console import Console

    return Console(width=400)


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
