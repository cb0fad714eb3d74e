"""`gate fleet`: every site and campaign in the store, each gate's standing verdict with its
date and flags, G3's headline figures and a run in progress; one table row per campaign
so a fleet reads at a glance (`gate status` is one campaign's detail)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict
from typing import Any

import click

from harness.cli.common import db_option, emit_json, json_option
from harness.cli.context import open_store
from harness.cli.run_view import iso, shown
from harness.cli.tables import COLOURS, Cell, Column, console, render, wide_option
from harness.registry import GATE_IDS
from harness.store.fleet import ABCell, CampaignLine, Filters, GateLine, lowest

# Each gate's column is never narrower than its longest word (INCONCLUSIVE, a date), so
# at 80 columns no verdict is cut; the campaign's name folds instead.
COLUMNS = (Column("site/campaign", weight=2, fold=True),
           *(Column(g, whole=True) for g in GATE_IDS))


def since_epoch(text: str) -> float:
    """--since DATE (YYYY-MM-DD) as local midnight in epoch seconds, the way the table
    prints dates; anything else is one line and exit 4."""
    from harness.errors import UsageError

    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"not a date: {text!r}", key="--since",
                         hint="a day as YYYY-MM-DD, e.g. 2026-12-01") from None
    return dt.datetime.combine(day, dt.time()).timestamp()


@click.command()
@db_option
@click.option("--site", default=None, metavar="NAME", help="Only this site (its name).")
@click.option("--customer", default=None, metavar="TEXT",
              help="Only sites whose customer contains TEXT (any case).")
@click.option("--accelerator", default=None, metavar="TEXT",
              help="Only campaigns whose accelerator vendor (site.vendor of the runs' "
                   "config) contains TEXT (any case).")
@click.option("--since", default=None, metavar="DATE",
              help="Only campaigns with a gate run that finished on or after DATE "
                   "(YYYY-MM-DD, local time).")
@json_option
@wide_option
def fleet(db_url: str | None, site: str | None, customer: str | None,
          accelerator: str | None, since: str | None, as_json: bool, wide: bool) -> None:
    """Every site and campaign: each gate's latest effective verdict, its date and flags
    (FORCED, PARTIAL, SIMULATED, WEAKENED), G3's worst TTFT drop and throughput gain, a
    run in progress (G4: windows stored of planned)."""
    from harness.store.fleet import fleet as read_fleet

    filters = Filters(site=site, customer=customer, accelerator=accelerator,
                      since=since_epoch(since) if since is not None else None)
    store = open_store(db_url, existing=True)
    try:
        found = read_fleet(store, GATE_IDS, filters)
    finally:
        store.close()
    if as_json:
        emit_json({"filters": {"site": site, "customer": customer,
                               "accelerator": accelerator, "since": since},
                   "campaigns": [campaign_dict(c) for c in found]})
        return
    out = console(wide)
    if not found:
        out.print("no campaign " + ("matches the filters" if any(
            (site, customer, accelerator, since)) else "in the store"),
            markup=False, highlight=False)
        return
    sites = len({c.site for c in found})
    render(out, COLUMNS, [[_who(c), *(gate_cell(g) for g in c.gates)] for c in found],
           title=f"fleet: {len(found)} campaign{'s' * (len(found) != 1)} in {sites} "
                 f"site{'s' * (sites != 1)}")


def _who(c: CampaignLine) -> str:
    return "\n".join(x for x in (c.ref, c.customer, f"vendor {c.vendor}" if c.vendor
                                 else "") if x)


def flags(g: GateLine) -> list[str]:
    """The words that qualify a standing verdict; WEAKENED: it needed a reviewer's
    sign-off (`signed` says whether it has one). PARTIAL is not among them: a partial run
    never stands (runs.stands), so it is shown as the later run it is."""
    return [w for w, on in (("FORCED", g.forced), ("SIMULATED", g.simulated),
                            ("WEAKENED", g.weakened)) if on]


def worst(cells: tuple[ABCell, ...], what: str) -> tuple[float, str] | None:
    """The lowest `what` ("drop" or "gain") of an A/B gate's cells and where it is (c=TIER, with
    the layout when the run has several)."""
    found = lowest(cells, what)
    if found is None:
        return None
    value, cell = found
    several = len({c.layout for c in cells}) > 1
    return value, f"{cell.layout} c={cell.tier}" if several else f"c={cell.tier}"


def gate_cell(g: GateLine) -> Cell:
    lines = [shown(g.verdict)]
    if g.finished_at is not None:
        lines.append(dt.datetime.fromtimestamp(g.finished_at).strftime("%Y-%m-%d"))
    words = flags(g) + ([("(signed)" if g.signed else "(unsigned)")] if g.weakened else [])
    if words:
        lines.append(" ".join(words))
    if g.partial_later is not None:
        lines.append(f"PARTIAL #{g.partial_later.run} {shown(g.partial_later.verdict)}")
    for what in ("drop", "gain"):
        found = worst(g.cells, what)
        if found is not None:
            lines.append(f"{what} {found[0] * 100:.0f}% {found[1]}")
    if g.running is not None:
        r = g.running
        lines.append(f"RUNNING #{r.run}")
        if r.windows is not None:
            lines.append(f"{r.windows}/{r.planned} windows" if r.planned is not None
                         else f"{r.windows} windows")
    return Cell("\n".join(lines), COLOURS.get(g.verdict, ""))


def campaign_dict(c: CampaignLine) -> dict[str, Any]:
    return {"site": c.site, "site_uid": c.site_uid, "customer": c.customer,
            "campaign": c.campaign, "campaign_uid": c.campaign_uid, "ref": c.ref,
            "vendor": c.vendor, "gates": [gate_dict(g) for g in c.gates]}


def gate_dict(g: GateLine) -> dict[str, Any]:
    return {
        "gate": g.gate, "verdict": g.verdict, "run": g.run, "uid": g.uid,
        "revision": g.revision, "date": iso(g.finished_at), "flags": flags(g),
        "forced": g.forced, "simulated": g.simulated, "weakened": g.weakened,
        "signed": g.signed,
        "partial_later": None if g.partial_later is None else {
            "run": g.partial_later.run, "verdict": g.partial_later.verdict,
            "date": iso(g.partial_later.finished_at)},
        "running": None if g.running is None else {
            "run": g.running.run, "uid": g.running.uid, "started": iso(g.running.started_at),
            "heartbeat": iso(g.running.heartbeat_at), "windows": g.running.windows,
            "planned": g.running.planned},
        # an A/B gate's cells (every gate has the keys: none, where it stores no cells)
        "cells": [asdict(c) for c in g.cells],
        "worst": {what: None if (w := worst(g.cells, what)) is None
                  else {"value": w[0], "where": w[1]} for what in ("drop", "gain")},
    }
