"""Campaigns, runs, checks, locks, sign-offs, facts, events, artifacts.

Append-only between runs: nothing here updates another run's results. A check is
committed the moment it finishes so a killed `gate` keeps everything measured.

A campaign's name is unique within its site only: every reader that takes a campaign name
takes "SITE/CAMPAIGN" or a bare name, and refuses a bare name two sites share, listing
them (find_campaign). Every row gets a globally unique uid at creation (schema.new_uid);
a run's `revision` counts changes of its measured content (abort and resume bump it).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from harness.errors import LockError, NotFoundError, RunStateError, UsageError
from harness.store.db import Store
from harness.store.schema import (
    ArtifactRow,
    BenchmarkRow,
    CampaignRow,
    CheckRow,
    EventRow,
    HostFactRow,
    RunLockRow,
    RunRow,
    SignoffRow,
    SiteRow,
    new_uid,
)
from harness.verdict import effective

STALE_AFTER = 120.0  # seconds without a heartbeat before a lock may be cleared


@dataclass(frozen=True)
class NewRun:
    """What a run is started with; everything here is stored on the run row."""

    campaign: str
    site: str
    customer: str
    kind: str
    gate: str | None = None
    forced: bool = False
    trigger: str = "manual"
    simulated: bool = False
    config_hash: str = ""
    config_json: dict[str, Any] | None = None
    operator: str = ""
    hosts: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    artifact_dir: str = ""
    suite: str = ""  # a custom suite's path and digest (tests); never a gate's verdict
    plan: tuple[str, ...] | None = None  # the check ids the suite declared
    overrides: tuple[str, ...] = ()  # "dotted.key=value" config values set on the command line


def _now() -> float:
    return time.time()


@dataclass(frozen=True)
class CampaignRef:
    """A campaign found by name: its ids, its name and its site's."""

    id: int
    uid: str
    name: str
    site: str

    @property
    def ref(self) -> str:
        """How to name it unambiguously: SITE/CAMPAIGN."""
        return f"{self.site}/{self.name}"


def split_campaign(campaign: str) -> tuple[str | None, str]:
    """"SITE/CAMPAIGN" -> (SITE, CAMPAIGN); a bare name -> (None, name). A campaign's name
    never holds a "/" (the config refuses one) but a site's may: split at the last."""
    site, sep, name = campaign.rpartition("/")
    return (site, name) if sep and site and name else (None, campaign)


def find_campaigns(store: Store, campaign: str) -> list[CampaignRef]:
    """Every campaign `campaign` names, by site: "SITE/CAMPAIGN" names one at most; a bare
    name every campaign of that name, in any site (names are unique within a site only).
    A name holding a "/" that names no SITE/CAMPAIGN is also tried whole (`gate bench
    --campaign` took any text before SITE/CAMPAIGN was read)."""
    site, name = split_campaign(campaign)
    q = (select(CampaignRow.id, CampaignRow.uid, CampaignRow.name, SiteRow.name)
         .join(SiteRow, SiteRow.id == CampaignRow.site_id)
         .order_by(SiteRow.name, CampaignRow.id))
    with store.session() as s:
        found = []
        if site is not None:
            found = list(s.execute(q.where(SiteRow.name == site, CampaignRow.name == name)))
        if not found:
            found = list(s.execute(q.where(CampaignRow.name == campaign)))
    return [CampaignRef(int(i), str(u), str(n), str(sn)) for i, u, n, sn in found]


def find_campaign(store: Store, campaign: str) -> CampaignRef | None:
    """The campaign `campaign` names ("SITE/CAMPAIGN" or a bare name); None when there is
    none; a UsageError listing the candidates when a bare name is in several sites."""
    found = find_campaigns(store, campaign)
    if len(found) > 1:
        raise UsageError(f"campaign {campaign!r} is in {len(found)} sites: "
                         f"{', '.join(c.ref for c in found)}; name one as SITE/CAMPAIGN")
    return found[0] if found else None


def resolve_campaign(store: Store, campaign: str) -> CampaignRef:
    """find_campaign, and a NotFoundError naming the campaign when there is none."""
    found = find_campaign(store, campaign)
    if found is None:
        raise NotFoundError(f"no campaign {campaign!r} in {store.url}", what="campaign",
                            name=campaign)
    return found


def ensure_campaign(store: Store, campaign: str, site: str, customer: str = "") -> int:
    """The id of campaign `campaign` within site `site`, made (with its site) if new: two
    sites may each have a campaign of the same name. Two `gate`s making the same one at
    once (two `gate run` racing on a new PostgreSQL store): the unique names refuse the
    second's rows, and it reads the first's."""
    try:
        return _ensure_campaign(store, campaign, site, customer)
    except IntegrityError:
        return _ensure_campaign(store, campaign, site, customer)


def _ensure_campaign(store: Store, campaign: str, site: str, customer: str) -> int:
    with store.session() as s:
        site_row = s.scalar(select(SiteRow).where(SiteRow.name == site))
        if site_row is None:
            site_row = SiteRow(name=site, customer=customer, created_at=_now())
            s.add(site_row)
            s.flush()
        row = s.scalar(select(CampaignRow).where(CampaignRow.site_id == site_row.id,
                                                 CampaignRow.name == campaign))
        if row is not None:
            return row.id
        row = CampaignRow(site_id=site_row.id, name=campaign, created_at=_now())
        s.add(row)
        s.flush()
        return row.id


def campaign_id(store: Store, campaign: str) -> int | None:
    """The id of the campaign `campaign` names (see find_campaign); None when absent."""
    found = find_campaign(store, campaign)
    return found.id if found else None


def start_run(store: Store, new: NewRun) -> int:
    cid = ensure_campaign(store, new.campaign, new.site, new.customer)
    now = _now()
    with store.session() as s:
        row = _run_row(cid, new, now)
        s.add(row)
        s.flush()
        return row.id


def _run_row(cid: int, new: NewRun, now: float) -> RunRow:
    return RunRow(
        campaign_id=cid, kind=new.kind, gate=new.gate, status="RUNNING", forced=new.forced,
        trigger=new.trigger, simulated=new.simulated, config_hash=new.config_hash,
        config_json=new.config_json or {}, operator=new.operator, hosts=list(new.hosts),
        args=list(new.args), pid=os.getpid(), hostname=socket.gethostname(),
        artifact_dir=new.artifact_dir, started_at=now, heartbeat_at=now,
        harness_version=_version(), suite=new.suite,
        plan=list(new.plan) if new.plan is not None else None,
        uid=new_uid(), overrides=list(new.overrides),
    )


def _version() -> str:
    from harness import __version__

    return __version__


def start_gate_run(store: Store, new: NewRun) -> int:
    """Create the run row and take the campaign lock in one transaction, so a refused
    second `gate run` leaves no half-made run behind.

    The lock is a `run_lock` row whose primary key is the campaign: the database itself
    refuses a second one, on SQLite (one file) and on PostgreSQL (one server, whatever
    host each `gate` runs on: a concurrent insert waits for the first's commit, then
    fails). A row, not a PostgreSQL advisory lock: it outlives a lost connection or a
    killed process (a network blip must not free a campaign a run still measures), it
    names its holder (run, pid, host), and `gate runs abort` clears a stale one."""
    cid = ensure_campaign(store, new.campaign, new.site, new.customer)
    now = _now()
    try:
        with store.session() as s:
            row = _run_row(cid, new, now)
            s.add(row)
            s.flush()
            s.add(RunLockRow(campaign_id=cid, run_id=row.id, pid=os.getpid(),
                             hostname=socket.gethostname(), acquired_at=now, heartbeat_at=now))
            s.flush()
            return row.id
    except IntegrityError:
        _refuse(store, cid)
        raise


def _refuse(store: Store, campaign: int) -> None:
    """Raise the LockError naming who holds the campaign (the CLI adds its commands)."""
    holder = lock_holder(store, campaign)
    if holder is None:
        raise LockError("campaign is busy: a run is running")
    held = f"run {holder.run_id} (pid {holder.pid} on {holder.hostname})"
    if process_alive(holder.pid, holder.hostname) is False:
        raise LockError(f"campaign is held by {held}, whose process is gone",
                        run_id=holder.run_id, gone=True) from None
    raise LockError(f"campaign is busy: {held} is running", run_id=holder.run_id,
                    hint="wait for it") from None


def liveness(run: RunRow) -> str:
    """For a RUNNING run: 'alive', 'gone' (its process is not on this host any more) or
    'elsewhere' (it runs on another host; judge by its heartbeat). '' otherwise."""
    if run.status != "RUNNING":
        return ""
    alive = process_alive(run.pid or -1, run.hostname)
    if alive is None:
        return "elsewhere"
    return "alive" if alive else "gone"


def lock_holder(store: Store, campaign: int) -> RunLockRow | None:
    with store.session() as s:
        return s.get(RunLockRow, campaign)


def heartbeat(store: Store, run_id: int) -> None:
    now = _now()
    with store.session() as s:
        s.execute(update(RunRow).where(RunRow.id == run_id).values(heartbeat_at=now))
        s.execute(update(RunLockRow).where(RunLockRow.run_id == run_id).values(heartbeat_at=now))


def finish_run(store: Store, run_id: int, *, verdict: str | None, reason: str,
               status: str = "FINISHED",
               partial: bool = False, selected: int = 0, total: int = 0,
               needs_signoff: bool = False, simulated: bool | None = None,
               revise: bool = False) -> None:
    """End a RUNNING run (a run no longer RUNNING is left as it is); `revise`: its
    revision goes up by one with it (abort_run)."""
    values: dict[str, Any] = dict(
        status=status, verdict=verdict, reason=reason, partial=partial, checks_selected=selected,
        checks_total=total, needs_signoff=needs_signoff, finished_at=_now(),
    )
    if simulated is not None:
        values["simulated"] = simulated
    if revise:
        values["revision"] = RunRow.revision + 1
    with store.session() as s:
        # Only a RUNNING run finishes: a run aborted meanwhile (`gate runs abort`) stays
        # ABORTED even if its old process comes back and reports.
        s.execute(update(RunRow).where(RunRow.id == run_id, RunRow.status == "RUNNING")
                  .values(**values))
        s.execute(delete(RunLockRow).where(RunLockRow.run_id == run_id))


def set_artifact_dir(store: Store, run_id: int, path: str) -> None:
    """Where the run keeps its artifacts (known once its id is): what a later command
    reads of it there (a detached soak's spool: `gate status`, `gate runs abort`)."""
    with store.session() as s:
        s.execute(update(RunRow).where(RunRow.id == run_id).values(artifact_dir=path))


def mark_simulated(store: Store, run_id: int) -> None:
    with store.session() as s:
        s.execute(update(RunRow).where(RunRow.id == run_id).values(simulated=True))


def process_alive(pid: int, hostname: str) -> bool | None:
    """True / False on this host; None when the run lives on another host."""
    if hostname != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abort_run(store: Store, run_id: int, *, force: bool = False) -> str:
    """End a RUNNING run as ABORTED (results kept) if its process is gone; its revision
    goes up by one."""
    run = get_run(store, run_id)
    if run.status != "RUNNING":
        raise RunStateError(f"run {run_id} is {run.status}, not RUNNING", run_id=run_id)
    alive = process_alive(run.pid or -1, run.hostname)
    stale = (_now() - (run.heartbeat_at or 0)) > STALE_AFTER
    if alive and not force:
        raise RunStateError(f"run {run_id} is still running (pid {run.pid})", run_id=run_id,
                            hint="stop that process first (Ctrl-C / kill)")
    if alive is None and not stale and not force:
        raise RunStateError(f"run {run_id} runs on {run.hostname} and its heartbeat is fresh",
                            run_id=run_id, overridable=True, hint="abort it there")
    finish_run(store, run_id, verdict="ERROR", reason="aborted: process gone", status="ABORTED",
               partial=run.partial, selected=run.checks_selected, total=run.checks_total,
               revise=True)
    return "aborted"


def get_run(store: Store, run_id: int) -> RunRow:
    with store.session() as s:
        row = s.get(RunRow, run_id)
        if row is None:
            raise NotFoundError(f"no run {run_id} in {store.url}", what="run", name=str(run_id))
        return row


def record_check(store: Store, run_id: int, *, nodeid: str, name: str, host: str | None,
                 outcome: str, message: str = "", expected: str = "", measured: str = "",
                 stage: str = "call", duration: float = 0.0,
                 attempt_started: float | None = None,
                 details: dict[str, object] | None = None) -> None:
    """Store a check's outcome. A resumed run runs its checks again: the row an earlier
    attempt stored for the same check (finished before `attempt_started`) is replaced,
    so a check is counted once."""
    with store.session() as s:
        if attempt_started is not None:
            s.execute(delete(CheckRow).where(CheckRow.run_id == run_id,
                                             CheckRow.nodeid == nodeid,
                                             CheckRow.finished_at < attempt_started))
        s.add(CheckRow(run_id=run_id, nodeid=nodeid, name=name, host=host, outcome=outcome,
                       message=message[:20000], expected=expected, measured=measured,
                       stage=stage, duration=duration, finished_at=_now(),
                       details=details or {}))


def checks(store: Store, run_id: int) -> list[CheckRow]:
    with store.session() as s:
        return list(s.scalars(select(CheckRow).where(CheckRow.run_id == run_id)
                              .order_by(CheckRow.id)))


def runs(store: Store, campaign: str | None = None, gate: str | None = None,
         kind: str | None = None) -> list[RunRow]:
    """Runs, oldest first: of `campaign` ("SITE/CAMPAIGN" or a bare name, see
    find_campaign; none when it is not in the store), `gate` and `kind` when given."""
    q = select(RunRow).order_by(RunRow.id)
    if campaign is not None:
        found = find_campaign(store, campaign)
        if found is None:
            return []
        q = q.where(RunRow.campaign_id == found.id)
    with store.session() as s:
        if gate is not None:
            q = q.where(RunRow.gate == gate)
        if kind is not None:
            q = q.where(RunRow.kind == kind)
        return list(s.scalars(q))


def campaign_names(store: Store) -> list[str]:
    """Every campaign as a user names it: its name, or SITE/CAMPAIGN when another site has
    a campaign of the same name; in the order they were made."""
    with store.session() as s:
        rows = list(s.execute(select(CampaignRow.name, SiteRow.name)
                              .join(SiteRow, SiteRow.id == CampaignRow.site_id)
                              .order_by(CampaignRow.id)))
    count: dict[str, int] = {}
    for name, _site in rows:
        count[name] = count.get(name, 0) + 1
    return [f"{site}/{name}" if count[name] > 1 else str(name) for name, site in rows]


def add_signoff(store: Store, run_id: int, *, role: str, name: str, note: str) -> None:
    """Record a sign-off with who ran the command, and where, beside the name given. A
    sign-off is a row of its own (with its own uid): the run's revision stays."""
    import getpass

    get_run(store, run_id)
    try:
        os_user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        os_user = f"uid {os.getuid()}"
    with store.session() as s:
        s.add(SignoffRow(run_id=run_id, role=role, name=name, note=note, at=_now(),
                         os_user=os_user, hostname=socket.gethostname()))


def signoffs(store: Store, run_id: int) -> list[SignoffRow]:
    with store.session() as s:
        return list(s.scalars(select(SignoffRow).where(SignoffRow.run_id == run_id)
                              .order_by(SignoffRow.id)))


def stands(run: RunRow, *, include_simulated: bool = True) -> bool:
    """Whether a gate run may stand for its gate (harness.campaign.gate_states, `gate
    fleet`): it ended (FINISHED or ABORTED) and ran every check; a partial run never does."""
    return not run.partial and run.status != "RUNNING" and (include_simulated
                                                             or not run.simulated)


def reviewer_signed(run: RunRow, known: Iterable[SignoffRow]) -> bool:
    """A reviewer's sign-off counts only if made after the run finished (a resumed run's
    new result needs a new sign-off)."""
    return any(x.role == "reviewer" and run.finished_at is not None
               and x.at >= run.finished_at for x in known)


def effective_verdict(store: Store, run: RunRow,
                      known: Iterable[SignoffRow] | None = None) -> str:
    """What the run counts as (harness.verdict.effective); `known`: its sign-offs, when
    the caller read many runs' at once (`gate fleet`)."""
    signed = reviewer_signed(run, signoffs(store, run.id) if known is None else known)
    return effective(run.verdict, run.needs_signoff, signed, run.status, kind=run.kind)


def add_event(store: Store, run_id: int, *, source: str, name: str, host: str | None,
              status: str, message: str = "", duration: float = 0.0) -> None:
    with store.session() as s:
        s.add(EventRow(run_id=run_id, source=source, name=name, host=host, status=status,
                       message=message[:20000], duration=duration, at=_now()))


def add_host_fact(store: Store, run_id: int, *, host: str, key: str, value: Any,
                  simulated: bool = False) -> None:
    with store.session() as s:
        s.add(HostFactRow(run_id=run_id, host=host, key=key, value=value, simulated=simulated))


def earlier_facts(store: Store, run_id: int, key: str) -> dict[str, tuple[int, Any]]:
    """host -> (run, value): the latest `key` each host had in the earlier runs of the same
    campaign and gate (what the arrival before a part was replaced recorded)."""
    from harness.store.lookups import gate_facts

    return gate_facts(store, run_id, None, key, earlier=True)


def add_artifact(store: Store, run_id: int, path: Path, *, kind: str = "",
                 host: str | None = None) -> str:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with store.session() as s:
        s.add(ArtifactRow(run_id=run_id, path=str(path), sha256=digest, size=path.stat().st_size,
                          kind=kind, host=host, at=_now()))
    return digest


def reopen_run(store: Store, run_id: int) -> None:
    """`gate resume`: an ABORTED run goes back to RUNNING under a fresh lock; its results
    stay, and its revision goes up by one (what it measures next changes its content)."""
    run = get_run(store, run_id)
    now = _now()
    try:
        with store.session() as s:
            s.execute(update(RunRow).where(RunRow.id == run_id).values(
                status="RUNNING", verdict=None, finished_at=None, pid=os.getpid(),
                hostname=socket.gethostname(), heartbeat_at=now,
                revision=RunRow.revision + 1))
            s.add(RunLockRow(campaign_id=run.campaign_id, run_id=run_id, pid=os.getpid(),
                             hostname=socket.gethostname(), acquired_at=now, heartbeat_at=now))
    except IntegrityError:
        _refuse(store, run.campaign_id)


def measured_phase_health(store: Store, run_id: int) -> list[tuple[float, dict[str, Any]]]:
    """(duration s, stored health) of each measured load phase of the run: what a caller
    reports about the machine the run measured on (docs/metrics.md "Phase health")."""
    b = BenchmarkRow
    with store.session() as s:
        rows = s.execute(select(b.duration, b.summary)
                         .where(b.run_id == run_id, b.phase == "measured")).all()
    return [(float(d or 0.0), dict((summary or {}).get("health") or {})) for d, summary in rows]
