"""Merge the finished runs of one store into another (`gate sync`), by uid.

Integer ids are each store's own, so nothing is matched by id: a site by its uid (else by
its name, unique in a store: the same site's two laptops made two uids for one site), a
campaign by its uid (else by its name within its site), a run by its uid, a child row by
its uid under its parent's id in the target, a request by (benchmark uid, idx). Rows go
in through the database's own upsert (INSERT ... ON CONFLICT, harness.store.sync_rows).

Per run, in one transaction of the target, so a run is wholly there or not at all and an
interrupted sync completes on the next:

- not in the target: added, with its site and campaign when they are new;
- the target has an older revision: its measured rows are replaced as a whole (updated);
- the same revision and the same content digest: skipped (a second sync changes nothing);
- the same revision and another digest: refused, the target's copy left as it is;
- the target has a newer revision: skipped;
- in progress on either side (RUNNING, or holding a campaign lock): skipped.

Sign-offs are a set by uid in every case but a refusal: both sides' are kept, and none
changes a revision. A run the source changes while it is copied (a resume) is rolled
back and looked at again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, exists, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DataError, IntegrityError

from harness.errors import SchemaTooNewError, UsageError
from harness.store.db import Store, _describe, _masked, absent_file, known_revisions
from harness.store.pgcopy import RowError
from harness.store.sync_rows import (
    RUN_LOCAL,
    copy_measured,
    delete_measured,
    measured_rows,
    merge_bookkeeping,
    run_digest,
    table,
    upsert,
)

ACTIONS = ("added", "updated", "skipped", "refused")
IN_PROGRESS = "in progress"


@dataclass
class RunSync:
    """What one run's sync did (or, in a dry run, would do)."""

    uid: str
    campaign: str  # SITE/CAMPAIGN
    gate: str  # the gate, or the run's kind (bench, import)
    revision: int  # the source's
    action: str  # one of ACTIONS
    why: str = ""
    target_revision: int | None = None  # before the sync; None: not in the target
    rows: int = 0  # measured rows written (a dry run: that would be)
    signoffs: int = 0  # sign-offs the target did not have

    def line(self) -> str:
        """The run named as a refusal names it: SITE/CAMPAIGN, gate, uid."""
        return f"{self.campaign} {self.gate} run {self.uid}: {self.why}"


@dataclass
class SyncResult:
    source: str  # as shown: a SQLite file's path, a server URL without its password
    target: str
    dry_run: bool
    runs: list[RunSync] = field(default_factory=list)
    sites: int = 0  # sites added
    campaigns: int = 0  # campaigns added

    def count(self, action: str) -> int:
        return sum(1 for r in self.runs if r.action == action)

    @property
    def refused(self) -> list[RunSync]:
        return [r for r in self.runs if r.action == "refused"]

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "dry_run": self.dry_run,
                "counts": {a: self.count(a) for a in ACTIONS},
                "sites_added": self.sites, "campaigns_added": self.campaigns,
                "signoffs_added": sum(r.signoffs for r in self.runs),
                "runs": [asdict(r) for r in self.runs]}


@dataclass(frozen=True)
class _Source:
    """A run of the source with what places it in a tree: its campaign and site."""

    id: int
    uid: str
    revision: int
    status: str
    label: str  # gate or kind
    locked: bool
    site: dict[str, Any]
    campaign: dict[str, Any]

    @property
    def ref(self) -> str:
        return f"{self.site['name']}/{self.campaign['name']}"


class _Changed(Exception):
    """The run changed under the sync (on either side): roll back and look again."""


def store_name(store: Store) -> str:
    """How a store is shown: a SQLite file's path, or the URL without its password."""
    return shown_url(store.url)


def shown_url(url: str) -> str:
    """`url` as it may be printed: a SQLite file's path, a server's URL without its
    password; one too broken to parse with any `user:password@` masked."""
    try:
        return _describe(url)
    except (ArgumentError, ValueError):
        return _masked(url)


def same_store(a: str, b: str) -> bool:
    """Whether two resolved URLs name one store (a SQLite file by its real path)."""
    try:
        pa, pb = make_url(a), make_url(b)
    except (ArgumentError, ValueError):
        return False
    if pa.get_backend_name() == pb.get_backend_name() == "sqlite":
        files = [Path(p.database).expanduser().resolve() if p.database
                 and p.database != ":memory:" else None for p in (pa, pb)]
        return files[0] is not None and files[0] == files[1]
    return pa.render_as_string(hide_password=True) == pb.render_as_string(hide_password=True)


def peek(url: str) -> Store:
    """The store at `url` as a dry run may read it, without writing to it: as it is when
    at this harness's schema; an empty in-memory stand-in when it is absent or empty (a
    sync would create it); a UsageError when it is at an older schema (reading it needs
    the migration a sync would make)."""
    if absent_file(url) is not None:
        return Store("sqlite://")
    store = Store(url, migrate=False)
    current, head = store.revision(), known_revisions()[1]
    if current == head:
        return store
    store.close()
    if current is None:
        return Store("sqlite://")
    if current not in known_revisions()[0]:
        raise SchemaTooNewError(f"store schema {current} is newer than this harness knows "
                                f"(head {head})", file=_describe(url),
                                hint="upgrade gate-harness; the store was left untouched")
    raise UsageError(f"the store {_describe(url)} is at schema {current}, older than this "
                     f"harness's {head}: a dry run cannot read it without upgrading it",
                     hint="sync without --dry-run, which upgrades it first")


def sync_stores(src: Store, dst: Store, *, dry_run: bool = False,
                shown: tuple[str, str] | None = None, campaign_uid: str | None = None,
                quick: bool = False) -> SyncResult:
    """Merge every run of `src` into `dst` (see the module docstring). A dry run reads
    both stores and writes nothing. `shown`: how to name (source, target) when they are
    stand-ins (a pack's copy, a dry run's empty store). `campaign_uid`: that campaign's
    runs only. `quick`: a run the target holds at the same revision is taken as the same
    without reading both contents (a site's own sync after each run, harness/workflow/
    autosync.py, where a G4 run's digest would cost seconds every time; `gate sync`
    compares them)."""
    source, target = shown or (store_name(src), store_name(dst))
    result = SyncResult(source=source, target=target, dry_run=dry_run)
    seen: set[str] = set()  # site and campaign uids a dry run has counted as new
    with src.engine.connect() as conn:
        for run in _source_runs(conn):
            if campaign_uid is not None and run.campaign.get("uid") != campaign_uid:
                continue
            done = _sync_run(conn, dst, run, dry_run, result, seen, quick)
            conn.rollback()  # no read transaction held across runs
            result.runs.append(done)
    return result


def _source_runs(conn: Connection) -> list[_Source]:
    run, camp, site, lock = (table(n) for n in ("run", "campaign", "site", "run_lock"))
    q = (select(run.c.id, run.c.uid, run.c.revision, run.c.status, run.c.gate, run.c.kind,
                exists().where(lock.c.run_id == run.c.id).label("locked"),
                *[c.label(f"c_{c.name}") for c in camp.c if c.name not in ("id", "site_id")],
                *[c.label(f"s_{c.name}") for c in site.c if c.name != "id"])
         .join(camp, camp.c.id == run.c.campaign_id).join(site, site.c.id == camp.c.site_id)
         .order_by(run.c.id))
    out = []
    for r in conn.execute(q):
        m = r._mapping
        out.append(_Source(
            id=int(m["id"]), uid=str(m["uid"]), revision=int(m["revision"]),
            status=str(m["status"]), label=str(m["gate"] or m["kind"]),
            locked=bool(m["locked"]),
            campaign={k[2:]: v for k, v in m.items() if k.startswith("c_")},
            site={k[2:]: v for k, v in m.items() if k.startswith("s_")}))
    return out


def _sync_run(conn: Connection, dst: Store, run: _Source, dry_run: bool,
              result: SyncResult, seen: set[str], quick: bool = False) -> RunSync:
    def fresh(action: str = "skipped", why: str = "") -> RunSync:
        return RunSync(uid=run.uid, campaign=run.ref, gate=run.label,
                       revision=run.revision, action=action, why=why)

    if run.status == "RUNNING" or run.locked:
        return fresh(why=f"{IN_PROGRESS}: not finished here")
    counted = result.sites, result.campaigns
    for _attempt in (1, 2):
        try:
            with dst.engine.begin() as out:
                return _apply(conn, out, run, fresh(), dry_run, result, seen, quick)
        except _Changed:
            result.sites, result.campaigns = counted
            conn.rollback()
        except (IntegrityError, DataError, RowError) as exc:
            result.sites, result.campaigns = counted
            first = (str(getattr(exc, "orig", exc)).strip().splitlines() or ["?"])[0]
            return fresh("refused", f"the target cannot take a row of it: {first}")
    return fresh(why="it changed while it was synced: sync again")


def _apply(conn: Connection, out: Connection, run: _Source, done: RunSync, dry_run: bool,
           result: SyncResult, seen: set[str], quick: bool = False) -> RunSync:
    """One run in the target's transaction `out` (nothing written in a dry run)."""
    t = table("run")
    found = out.execute(select(t.c.id, t.c.revision, t.c.status, t.c.campaign_id).where(
        t.c.uid == run.uid)).first()
    if found is None:
        done.action = "added"
        if dry_run:
            _count_new(out, run, result, seen)
            done.rows = measured_rows(conn, run.id)
            done.signoffs = merge_bookkeeping(conn, out, run.id, -1, dry_run=True)
            return done
        campaign_id = _ensure_tree(out, run, result)
        row = _run_values(conn, run, campaign_id)
        made = out.scalar(upsert(out, t).values(row).on_conflict_do_nothing(
            index_elements=["uid"]).returning(t.c.id))
        if made is None:
            raise _Changed  # another sync added it meanwhile
        return _fill(conn, out, run, int(made), done)
    target, revision, status = int(found.id), int(found.revision), str(found.status)
    done.target_revision = revision
    locked = out.scalar(select(exists().where(table("run_lock").c.run_id == target)))
    if status == "RUNNING" or locked:
        done.why = f"{IN_PROGRESS} in the target (revision {revision})"
        return done
    if revision > run.revision:
        done.why = f"the target has a newer revision ({revision})"
    elif revision < run.revision:
        done.action, done.why = "updated", f"revision {revision} replaced"
        if dry_run:
            done.rows = measured_rows(conn, run.id)
        else:
            _replace_run(conn, out, run, target, int(found.campaign_id))
            return _fill(conn, out, run, target, done)
    elif quick:
        done.why = "same revision"
    elif run_digest(conn, run.id) == run_digest(out, target):
        done.why = "same content"
    else:
        done.action = "refused"
        done.why = (f"its content differs from the target's at the same revision "
                    f"({revision}); the target keeps its own")
        return done
    done.signoffs = merge_bookkeeping(conn, out, run.id, target, dry_run=dry_run)
    return done


def _fill(conn: Connection, out: Connection, run: _Source, target: int,
          done: RunSync) -> RunSync:
    """The measured rows and the sign-offs of a run just added or replaced; the source's
    run must not have changed meanwhile (else the transaction is rolled back)."""
    done.rows = copy_measured(conn, out, run.id, target)
    done.signoffs = merge_bookkeeping(conn, out, run.id, target)
    t = table("run")
    now = conn.execute(select(t.c.revision, t.c.status).where(t.c.id == run.id)).first()
    if now is None or (int(now.revision), str(now.status)) != (run.revision, run.status):
        raise _Changed
    return done


def _run_values(conn: Connection, run: _Source, campaign_id: int) -> dict[str, Any]:
    t = table("run")
    row = conn.execute(select(t).where(t.c.id == run.id)).one()._mapping
    values = {k: v for k, v in row.items() if k != "id"}
    values["campaign_id"] = campaign_id
    if (int(values["revision"]), str(values["status"])) != (run.revision, run.status):
        raise _Changed
    return values


def _replace_run(conn: Connection, out: Connection, run: _Source, target: int,
                 campaign_id: int) -> None:
    """The target's older revision gives way: its row takes the source's values (the
    database's upsert, only over an older revision) and its measured rows go."""
    t = table("run")
    row = _run_values(conn, run, campaign_id)
    ins = upsert(out, t).values(row)
    kept = RUN_LOCAL | {"uid"}
    stmt = ins.on_conflict_do_update(
        index_elements=["uid"], set_={k: ins.excluded[k] for k in row if k not in kept},
        where=t.c.revision < ins.excluded.revision).returning(t.c.id)
    if out.scalar(stmt) is None:
        raise _Changed  # the target's revision moved meanwhile
    delete_measured(out, target)


def _ensure_tree(out: Connection, run: _Source, result: SyncResult) -> int:
    """The target's id of the run's campaign, made (with its site) when new."""
    site, camp = table("site"), table("campaign")
    if out.scalar(upsert(out, site).values(dict(run.site)).on_conflict_do_nothing()
                  .returning(site.c.id)) is not None:
        result.sites += 1
    site_id = _site_id(out, run)
    assert site_id is not None  # just made, or found by uid or name
    values = {**run.campaign, "site_id": site_id}
    if out.scalar(upsert(out, camp).values(values).on_conflict_do_nothing()
                  .returning(camp.c.id)) is not None:
        result.campaigns += 1
    found = _campaign_id(out, run, site_id)
    assert found is not None
    return found


def _site_id(out: Connection, run: _Source) -> int | None:
    site = table("site")
    found = out.scalar(select(site.c.id).where(site.c.uid == run.site["uid"]))
    if found is None:
        found = out.scalar(select(site.c.id).where(site.c.name == run.site["name"]))
    return None if found is None else int(found)


def _campaign_id(out: Connection, run: _Source, site_id: int | None) -> int | None:
    camp = table("campaign")
    found = out.scalar(select(camp.c.id).where(camp.c.uid == run.campaign["uid"]))
    if found is None and site_id is not None:
        found = out.scalar(select(camp.c.id).where(camp.c.site_id == site_id,
                                                   camp.c.name == run.campaign["name"]))
    return None if found is None else int(found)


def _count_new(out: Connection, run: _Source, result: SyncResult, seen: set[str]) -> None:
    """A dry run: count the site and campaign the run would add."""
    site_id = _site_id(out, run)
    if site_id is None and run.site["uid"] not in seen:
        seen.add(run.site["uid"])
        result.sites += 1
    if _campaign_id(out, run, site_id) is None and run.campaign["uid"] not in seen:
        seen.add(run.campaign["uid"])
        result.campaigns += 1
