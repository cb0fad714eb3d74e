"""`gate status`: each gate's latest verdict, date, marks and attempts."""

from __future__ import annotations

from typing import Any

import click

from harness.cli.common import config_option, db_option, emit_json, json_option
from harness.cli.context import campaign_name, gone_hint, open_store
from harness.cli.run_view import marks, run_dict, times, when_short
from harness.cli.tables import Cell, Column, console, render, verdict_cell, wide_option
from harness.cli.wrap import say


def _campaign_or_fail(asked: tuple[str, str] | None, explicit: str | None,
                      store: Any) -> tuple[str, str]:
    """(how the store finds it, how it is shown): the campaign asked for (--campaign, as
    SITE/CAMPAIGN or a bare name, checked against the store; or the config's), else the
    store's only campaign. A bare name in several sites is refused, listing them."""
    from harness.errors import UsageError
    from harness.store import runs as store_runs

    # a typo must not list empty gates, exit 0
    if asked and explicit and store_runs.find_campaign(store, asked[0]) is None:
        from harness.errors import NotFoundError

        names = store_runs.campaign_names(store)
        raise NotFoundError(f"no campaign {explicit!r} in {store.url}"
                            + (f" (campaigns here: {', '.join(names)})" if names else ""),
                            what="campaign", name=explicit)
    if asked:
        return asked
    names = store_runs.campaign_names(store)
    if len(names) == 1:
        return names[0], names[0]
    raise UsageError("which campaign?", hint="pass --campaign NAME or -c gate.yaml"
                     + (f"; campaigns in the store: {', '.join(names)}" if names else ""))


# The gate and its name share a column, so the table fits 80 columns with no verdict cut.
COLUMNS = (Column("gate", whole=True), Column("verdict", whole=True),
           Column("run", whole=True), Column("date", whole=True), Column("marks", weight=2),
           Column("attempts", whole=True))


@click.command()
@config_option
@db_option
@click.option("--campaign", "campaign", default=None,
              help="Campaign name, or SITE/CAMPAIGN (default: the config's).")
@json_option
@wide_option
def status(config_path: str, db_url: str | None, campaign: str | None, as_json: bool,
           wide: bool) -> None:
    """Each gate's latest verdict, date and marks for the campaign."""
    from rich.markup import escape

    from harness.campaign import gate_states
    from harness.registry import gate_spec
    from harness.store import runs as store_runs
    from harness.store.db import absent_file

    configured = campaign_name(config_path, campaign)  # a bad config first, then the store
    # A site's config before its first run: every gate "not run", from an empty store in
    # memory rather than a new gate.db left in the current directory.
    fresh = configured is not None and campaign is None and absent_file(db_url) is not None
    store = open_store("sqlite://" if fresh else db_url, existing=True)
    key, name = _campaign_or_fail(configured, campaign, store)
    states = gate_states(store, key)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for st in states:
        d = run_dict(store, st.run) if st.run else None
        attempts = [_attempt(store, r) for r in store_runs.runs(store, campaign=key,
                                                                 gate=st.gate, kind="gate")
                    if not r.suite]
        running = st.latest_any if st.latest_any and st.latest_any.status == "RUNNING" \
            else None
        said = _detached(store, st.gate, st.latest_any.id) if st.latest_any else None
        if said:
            notes.append(said)
        if running is not None and store_runs.liveness(running) == "gone":
            notes.append(f"{st.gate} run {running.id} is RUNNING but its process "
                         f"(pid {running.pid}) is gone: {gone_hint(running.id)}")
        rows.append({"gate": st.gate, "name": gate_spec(st.gate).title, "verdict": st.verdict,
                     "run": d["id"] if d else None, "date": d["finished_at"] if d else None,
                     "forced": bool(d and d["forced"]), "marks": marks(d) if d else "",
                     "running": store_runs.liveness(running) or "alive" if running else "",
                     "running_run": running.id if running else None, "attempts": attempts})
    if as_json:
        emit_json({"campaign": name, "notes": notes, "gates": [
            {**times(r, "date"), "attempts": [times(a, "date") for a in r["attempts"]]}
            for r in rows]})
        return
    cells: list[list[Cell | str]] = []
    for r in rows:
        state = r["running"]
        shown_marks = str(r["marks"]) + (
            f" (run {r['running_run']} is stale: see below)" if state == "gone"
            else " (a run is in progress)" if state else "")
        date = r["date"]
        cells.append([f"{r['gate']} {r['name']}", verdict_cell(str(r["verdict"])),
                      str(r["run"] or ""),
                      when_short(date if isinstance(date, float) else None),
                      shown_marks.strip(), _attempts_text(r["attempts"])])
    out = console(wide)
    render(out, COLUMNS, cells, title=f"campaign {name}")
    for note in notes:
        say(out, escape(note), 4)


def _detached(store: Any, gate: str, run_id: int) -> str | None:
    """What the gate's run still has running after its process ended (its suite's
    `detached` hook: G4's soak)."""
    from harness.registry import gate_spec
    from harness.runner import suite_hooks

    if not gate_spec(gate).built:
        return None
    hook = suite_hooks(gate).detached
    return hook(store, run_id) if hook is not None else None


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
