"""`gate fleet`'s read: every campaign in the store, each gate's standing verdict with its
flags, the A/B gate's headline figures (its cells) and a gate run still in progress.

Why a module of its own: `gate status` reads one campaign a query per gate and per run
(harness.campaign.gate_states); over a fleet's hundreds of campaigns on a remote
PostgreSQL that is thousands of round trips. Here the whole store is read in a few
set-based SELECTs (campaigns; gate runs; then the sign-offs, A/B cells and soak-window
counts of only the runs shown), and each gate's run is picked by the same rules as `gate
status`: runs.stands and runs.effective_verdict, given the sign-offs read in bulk.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import load_only

from harness.errors import NotFoundError
from harness.store import runs as store_runs
from harness.store.db import Store
from harness.store.schema import CampaignRow, CellRow, RunRow, SignoffRow, SiteRow, SoakWindowRow

NOT_RUN = "not run"
CHUNK = 500  # ids per IN list: far below SQLite's bound-parameter limit
# What a gate run is read with here: no config, hosts or args (a G3 run's config is KBs)
_LIGHT = (RunRow.id, RunRow.uid, RunRow.campaign_id, RunRow.gate, RunRow.kind,
          RunRow.status, RunRow.verdict, RunRow.partial, RunRow.forced, RunRow.simulated,
          RunRow.needs_signoff, RunRow.started_at, RunRow.finished_at, RunRow.heartbeat_at,
          RunRow.revision)
# site.vendor as each run's config stored it: the only field naming the accelerator
_VENDOR = RunRow.config_json[("site", "vendor")].as_string()


@dataclass(frozen=True)
class Filters:
    """Which campaigns to list. site: exact name; customer / accelerator: a substring of
    the site's customer / the runs' site.vendor, any case; since: epoch seconds, a gate
    run of the campaign finished at or after it."""

    site: str | None = None
    customer: str | None = None
    accelerator: str | None = None
    since: float | None = None


@dataclass(frozen=True)
class ABCell:
    """An A/B gate's cell: its decision and headline figures (shares: 0.31 is 31 %)."""

    layout: str
    tier: int
    verdict: str
    drop: float | None
    drop_lo: float | None
    drop_hi: float | None
    gain: float | None
    gain_lo: float | None
    gain_hi: float | None


def lowest(cells: Sequence[ABCell], what: str) -> tuple[float, ABCell] | None:
    """The lowest `what` ("drop" or "gain") over an A/B gate's cells and its cell, ties to the
    first layout and tier: the campaign's worst case, as `gate fleet` and its report show
    it."""
    known = [(float(v), c) for c in cells if (v := getattr(c, what)) is not None]
    if not known:
        return None
    return min(known, key=lambda x: (x[0], x[1].layout, x[1].tier))


@dataclass(frozen=True)
class Running:
    """A gate run still RUNNING: a G4 soak's windows stored so far of those planned."""

    run: int
    uid: str
    started_at: float
    heartbeat_at: float | None
    windows: int | None = None  # G4: soak windows in the store
    planned: int | None = None  # G4: whole windows in its configured soak


@dataclass(frozen=True)
class Later:
    """A partial run that ended after the standing one: it does not count, but says the
    gate was touched since."""

    run: int
    verdict: str
    finished_at: float | None


@dataclass(frozen=True)
class GateLine:
    """One gate of a campaign: its standing run's effective verdict and flags."""

    gate: str
    verdict: str  # effective (a signed above-band INCONCLUSIVE is PASS), or NOT_RUN
    run: int | None = None
    uid: str | None = None
    revision: int | None = None
    finished_at: float | None = None
    forced: bool = False
    simulated: bool = False
    weakened: bool = False  # it needed a reviewer's sign-off
    signed: bool = False  # ... and a reviewer signed after it finished
    partial_later: Later | None = None
    running: Running | None = None
    cells: tuple[ABCell, ...] = ()  # an A/B gate's (harness.registry.AB_GATE)


@dataclass(frozen=True)
class CampaignLine:
    site: str
    site_uid: str
    customer: str
    campaign: str
    campaign_uid: str
    vendor: str  # site.vendor of its latest gate run that named one
    gates: tuple[GateLine, ...] = field(default_factory=tuple)

    @property
    def ref(self) -> str:
        return f"{self.site}/{self.campaign}"


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for i in range(0, len(ids), CHUNK):
        yield list(ids[i:i + CHUNK])


def fleet(store: Store, gates: Sequence[str], filters: Filters | None = None
          ) -> list[CampaignLine]:
    """Every campaign passing `filters` (None: all), by site and name, each with a
    GateLine per gate of `gates`. A site asked for by name that the store lacks is a
    NotFoundError."""
    filters = filters or Filters()
    with store.session() as s:
        camps = _campaigns(s, store, filters)
        history: dict[tuple[int, str], list[RunRow]] = defaultdict(list)
        vendor: dict[int, str] = {}
        q = (select(RunRow, _VENDOR).options(load_only(*_LIGHT))
             .where(RunRow.kind == "gate", RunRow.gate.in_(list(gates)),
                    or_(RunRow.suite == "", RunRow.suite.is_(None)))  # packaged suite only
             .order_by(RunRow.id))
        for run, named in s.execute(q):
            if run.campaign_id in camps and run.gate is not None:
                history[(run.campaign_id, run.gate)].append(run)
                if named:
                    vendor[run.campaign_id] = str(named)
        chosen = {cid: camp for cid, camp in camps.items()
                  if _wanted(cid, vendor, history, gates, filters)}
        standing = {k: _standing(v) for k, v in history.items() if k[0] in chosen}
        shown = [r.id for r in standing.values() if r is not None]
        signoffs = _signoffs(s, shown)
        # only an A/B gate's runs store cells, only a soak's store windows: no gate named
        cells = _cells(s, [r.id for r in standing.values() if r is not None])
        running = {k: v[-1] for k, v in history.items()
                   if k[0] in chosen and v[-1].status == "RUNNING"}
        progress = _progress(s, [r.id for r in running.values()])
    out = []
    for cid, (site, site_uid, customer, name, uid) in chosen.items():
        lines = tuple(_line(store, g, history.get((cid, g), []), standing.get((cid, g)),
                            running.get((cid, g)), signoffs, cells, progress)
                      for g in gates)
        out.append(CampaignLine(site, site_uid, customer, name, uid, vendor.get(cid, ""),
                                lines))
    return sorted(out, key=lambda c: (c.site, c.campaign))


def _campaigns(s: Any, store: Store, f: Filters) -> dict[int, tuple[str, str, str, str, str]]:
    """campaign id -> (site, site uid, customer, campaign, campaign uid), by site and
    customer."""
    q = (select(CampaignRow.id, SiteRow.name, SiteRow.uid, SiteRow.customer,
                CampaignRow.name, CampaignRow.uid)
         .join(SiteRow, SiteRow.id == CampaignRow.site_id))
    if f.site is not None:
        q = q.where(SiteRow.name == f.site)
    found = {int(cid): (str(site), str(suid), str(cust or ""), str(name), str(uid))
             for cid, site, suid, cust, name, uid in s.execute(q)}
    if f.site is not None and not found:
        sites = sorted(str(n) for n in s.scalars(select(SiteRow.name)))
        raise NotFoundError(f"no site {f.site!r} in {store.url}"
                            + (f" (sites here: {', '.join(sites)})" if sites else ""),
                            what="site", name=f.site)
    if f.customer is not None:
        needle = f.customer.casefold()
        found = {k: v for k, v in found.items() if needle in v[2].casefold()}
    return found


def _wanted(cid: int, vendor: dict[int, str], history: dict[tuple[int, str], list[RunRow]],
            gates: Sequence[str], f: Filters) -> bool:
    if f.accelerator is not None and f.accelerator.casefold() not in \
            vendor.get(cid, "").casefold():
        return False
    if f.since is None:
        return True
    since = f.since
    return any(r.finished_at is not None and r.finished_at >= since
               for g in gates for r in history.get((cid, g), []))


def _standing(history: list[RunRow]) -> RunRow | None:
    """The run that stands for the gate, as `gate status` picks it: the latest that
    stands (runs.stands; simulated ones included, and flagged)."""
    counted = [r for r in history if store_runs.stands(r)]
    return counted[-1] if counted else None


def _signoffs(s: Any, ids: list[int]) -> dict[int, list[SignoffRow]]:
    out: dict[int, list[SignoffRow]] = defaultdict(list)
    for part in _chunks(ids):
        for row in s.scalars(select(SignoffRow)
                             .options(load_only(SignoffRow.run_id, SignoffRow.role,
                                                SignoffRow.at))
                             .where(SignoffRow.run_id.in_(part)).order_by(SignoffRow.id)):
            out[row.run_id].append(row)
    return out


def _cells(s: Any, ids: list[int]) -> dict[int, list[ABCell]]:
    c = CellRow
    out: dict[int, list[ABCell]] = defaultdict(list)
    for part in _chunks(ids):
        q = (select(c.run_id, c.layout, c.tier, c.verdict, c.drop, c.drop_lo, c.drop_hi,
                    c.gain, c.gain_lo, c.gain_hi)
             .where(c.run_id.in_(part)).order_by(c.run_id, c.layout, c.tier))
        for rid, *rest in s.execute(q):
            out[int(rid)].append(ABCell(*rest))
    return out


def _progress(s: Any, ids: list[int]) -> dict[int, tuple[int, int | None]]:
    """Running soak -> (windows stored, whole windows its config plans; None: unreadable).
    A run is a soak here once it has stored a window (before that, no progress to show)."""
    out: dict[int, tuple[int, int | None]] = {}
    for part in _chunks(ids):
        counts = dict(s.execute(select(SoakWindowRow.run_id, func.count())
                                .where(SoakWindowRow.run_id.in_(part))
                                .group_by(SoakWindowRow.run_id)).all())
        if not counts:
            continue
        for rid, config in s.execute(select(RunRow.id, RunRow.config_json)
                                     .where(RunRow.id.in_(list(counts)))):
            out[int(rid)] = (int(counts[rid]), planned_windows(config))
    return out


def planned_windows(config: Any) -> int | None:
    """Whole windows of the soak a run's stored config plans (harness.config.soak.G4:
    duration / window); None when the config does not say (an old or foreign run)."""
    from pydantic import ValidationError

    from harness.config.soak import G4

    raw = ((config or {}).get("gates") or {}).get("g4") if isinstance(config, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        return G4.model_validate(raw).windows
    except (ValidationError, ValueError, TypeError):
        return None


def _line(store: Store, gate: str, history: list[RunRow], run: RunRow | None,
          busy: RunRow | None, signoffs: dict[int, list[SignoffRow]],
          cells: dict[int, list[ABCell]], progress: dict[int, tuple[int, int | None]]
          ) -> GateLine:
    after = run.id if run is not None else 0
    later = [r for r in history if r.partial and r.status != "RUNNING" and r.id > after]
    # a partial run never needs a sign-off (harness.runner): no sign-offs to read
    partial = Later(later[-1].id, store_runs.effective_verdict(store, later[-1], ()),
                    later[-1].finished_at) if later else None
    running = None
    if busy is not None:
        windows, planned = progress.get(busy.id, (None, None))
        running = Running(busy.id, busy.uid, busy.started_at, busy.heartbeat_at, windows,
                          planned)
    if run is None:
        return GateLine(gate, NOT_RUN, partial_later=partial, running=running)
    known = signoffs.get(run.id, [])
    return GateLine(
        gate, store_runs.effective_verdict(store, run, known),
        run=run.id, uid=run.uid, revision=run.revision, finished_at=run.finished_at,
        forced=bool(run.forced), simulated=bool(run.simulated),
        weakened=bool(run.needs_signoff), signed=store_runs.reviewer_signed(run, known),
        partial_later=partial, running=running, cells=tuple(cells.get(run.id, ())))
