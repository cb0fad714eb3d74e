"""The report's reads: one run's rows, a campaign's runs, as plain data and pandas frames.

The store is the only door to the gate's database, so every query the report needs is
here and the report only shapes what comes back. Tables come back as pandas DataFrames
built here with `pandas.read_sql` (pandas imported lazily, so a process that only writes,
like a load agent, never loads it): a G4 run's million request rows then arrive as a few
numpy columns straight from the cursor, never as a million dicts or ORM objects, and the
frames are exactly what the report read before (same columns, order and dtypes). Single
rows (a run, a campaign, a gate's attempts) come back as frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, and_, case, false, or_, select

from harness.store import runs as store_runs
from harness.store.db import Store
from harness.store.schema import (
    ArtifactRow,
    BenchmarkRow,
    CampaignRow,
    CellRow,
    CheckRow,
    EventRow,
    HostFactRow,
    RequestRow,
    RunRow,
    SeriesRow,
    SignoffRow,
    SiteRow,
)

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RunInfo:
    """One run row plus its campaign and site, and what the run counts as."""

    id: int
    uid: str  # unique across stores and sites
    gate: str | None
    kind: str
    status: str
    verdict: str | None
    effective: str
    signed: bool
    reason: str
    partial: bool
    checks_selected: int
    checks_total: int
    forced: bool
    needs_signoff: bool
    trigger: str
    simulated: bool
    config_hash: str
    config_json: dict[str, Any]
    harness_version: str
    operator: str
    hosts: list[Any]
    args: list[Any]
    overrides: list[str]  # `--set key=value` given on the command line
    hostname: str
    artifact_dir: str
    started_at: float
    finished_at: float | None
    heartbeat_at: float | None
    campaign: str
    site: str
    customer: str

    @property
    def campaign_ref(self) -> str:
        """The run's campaign named unambiguously (SITE/CAMPAIGN), for the campaign
        readers below: a bare name may be in several sites."""
        return f"{self.site}/{self.campaign}"


@dataclass(frozen=True)
class RunTables:
    """One run's rows, one frame per table, in the order the report lists them."""

    checks: pd.DataFrame
    signoffs: pd.DataFrame
    facts: pd.DataFrame
    events: pd.DataFrame  # failed and unreachable events only
    artifacts: pd.DataFrame
    benchmarks: pd.DataFrame
    cells: pd.DataFrame
    series: pd.DataFrame  # only the metrics asked for


@dataclass(frozen=True)
class CampaignInfo:
    name: str
    site: str
    customer: str

    @property
    def ref(self) -> str:
        """SITE/CAMPAIGN: the campaign named unambiguously."""
        return f"{self.site}/{self.name}"


@dataclass(frozen=True)
class AttemptInfo:
    """One run of a gate, as page 1 lists every attempt."""

    id: int
    status: str
    effective: str
    needs_signoff: bool
    forced: bool
    partial: bool
    simulated: bool
    started_at: float
    finished_at: float | None


def _read(store: Store, query: Select[*tuple[Any, ...]]) -> pd.DataFrame:
    """The query as a frame. A NULL in a text column stays None: pandas 3 reads text as
    a string dtype whose NULL is NaN, which is truthy, so `c.host or "—"` printed "nan"
    for a check without a host."""
    import pandas as pd

    frame = pd.read_sql(query, store.engine)
    for col in frame.columns:
        if pd.api.types.is_string_dtype(frame[col]) or frame[col].dtype == object:
            frame[col] = frame[col].astype(object).where(frame[col].notna(), None)
    return frame


def run_info(store: Store, run_id: int) -> RunInfo:
    """The run with its campaign and site; NotFoundError naming the run when absent."""
    row = store_runs.get_run(store, run_id)
    place = select(CampaignRow.name, SiteRow.name, SiteRow.customer).join(
        SiteRow, SiteRow.id == CampaignRow.site_id).where(CampaignRow.id == row.campaign_id)
    with store.engine.connect() as conn:
        campaign, site, customer = conn.execute(place).one()
        # As effective_verdict counts it: a reviewer's sign-off made after the run's
        # result (a resumed run's new result needs a new one).
        signed = row.finished_at is not None and conn.execute(select(SignoffRow.id).where(
            SignoffRow.run_id == run_id, SignoffRow.role == "reviewer",
            SignoffRow.at >= row.finished_at)).first() is not None
    return RunInfo(
        id=row.id, uid=row.uid, gate=row.gate, kind=row.kind, status=row.status,
        verdict=row.verdict,
        effective=store_runs.effective_verdict(store, row), signed=signed,
        reason=row.reason or "", partial=bool(row.partial),
        checks_selected=row.checks_selected or 0, checks_total=row.checks_total or 0,
        forced=bool(row.forced), needs_signoff=bool(row.needs_signoff), trigger=row.trigger,
        simulated=bool(row.simulated), config_hash=row.config_hash or "",
        config_json=dict(row.config_json or {}), harness_version=row.harness_version or "",
        operator=row.operator or "", hosts=list(row.hosts or []), args=list(row.args or []),
        overrides=[str(o) for o in row.overrides or []], hostname=row.hostname or "",
        artifact_dir=row.artifact_dir or "",
        started_at=row.started_at, finished_at=row.finished_at, heartbeat_at=row.heartbeat_at,
        campaign=str(campaign), site=str(site), customer=str(customer or ""),
    )


def run_tables(store: Store, run_id: int, *, series_metrics: tuple[str, ...] = (),
               series_prefixes: tuple[str, ...] = ()) -> RunTables:
    """Every table of one run except its requests. Series are read only for the metrics
    named or prefixed (the report draws a few; a run holds every /metrics scrape)."""
    c, s, f, e, a, bm, cl, se = (CheckRow, SignoffRow, HostFactRow, EventRow, ArtifactRow,
                                 BenchmarkRow, CellRow, SeriesRow)
    wanted = or_(false(), *(se.metric == m for m in series_metrics),
                 *(se.metric.like(p + "%") for p in series_prefixes))
    return RunTables(
        checks=_read(store, select(c.nodeid, c.name, c.host, c.outcome, c.message, c.expected,
                                   c.measured, c.stage, c.duration, c.finished_at, c.details)
                     .where(c.run_id == run_id).order_by(c.id)),
        signoffs=_read(store, select(s.role, s.name, s.note, s.at, s.os_user, s.hostname)
                       .where(s.run_id == run_id).order_by(s.id)),
        facts=_read(store, select(f.host, f.key, f.value, f.simulated)
                    .where(f.run_id == run_id).order_by(f.host, f.key, f.id)),
        events=_read(store, select(e.source, e.name, e.host, e.status, e.message, e.at)
                     .where(e.run_id == run_id, e.status.in_(("failed", "unreachable")))
                     .order_by(e.id)),
        artifacts=_read(store, select(a.path, a.sha256, a.size, a.kind, a.host, a.at)
                        .where(a.run_id == run_id).order_by(a.id)),
        benchmarks=_read(store, select(bm.id, bm.arm, bm.layout, bm.tier, bm.repetition,
                                       bm.phase, bm.driver, bm.params, bm.summary, bm.status,
                                       bm.started_at, bm.duration)
                         .where(bm.run_id == run_id).order_by(bm.id)),
        cells=_read(store, select(*(col for col in cl.__table__.columns if col.name != "uid"))
                    .where(cl.run_id == run_id).order_by(cl.layout, cl.tier)),
        series=_read(store, select(se.benchmark_id, se.source, se.metric, se.at, se.value)
                     .where(se.run_id == run_id, wanted).order_by(se.source, se.at)),
    )


def run_requests(store: Store, run_id: int) -> pd.DataFrame:
    """The run's non-warm-up requests: benchmark_id, ttft, output_tokens and `failed` (1
    when it has no TTFT, an error, or an HTTP status >= 400; else 0), as stored."""
    r, b = RequestRow, BenchmarkRow
    failed = or_(r.ttft.is_(None), r.error_kind.is_not(None), r.error.is_not(None),
                 and_(r.status.is_not(None), r.status >= 400))
    return _read(store, select(r.benchmark_id, r.ttft, r.output_tokens,
                               case((failed, 1), else_=0).label("failed"))
                 .join(b, b.id == r.benchmark_id)
                 .where(b.run_id == run_id, r.warmup == false()))


def campaign_info(store: Store, campaign: str) -> CampaignInfo:
    """The campaign ("SITE/CAMPAIGN" or a bare name) and its site; NotFoundError naming the
    campaign when absent, a UsageError listing the sites when a bare name is in several."""
    ref = store_runs.resolve_campaign(store, campaign)
    q = select(SiteRow.customer).join(CampaignRow, SiteRow.id == CampaignRow.site_id).where(
        CampaignRow.id == ref.id)
    with store.engine.connect() as conn:
        customer = conn.execute(q).scalar()
    return CampaignInfo(name=ref.name, site=ref.site, customer=str(customer or ""))


def _of_campaign(store: Store, campaign: str) -> ColumnElement[bool]:
    """Where a run is of `campaign` ("SITE/CAMPAIGN" or a bare name; nothing matches one
    the store does not hold)."""
    found = store_runs.find_campaign(store, campaign)
    return RunRow.campaign_id == found.id if found is not None else false()


def gate_runs(store: Store, campaign: str) -> pd.DataFrame:
    """The campaign's gate runs (id, gate, status, partial, started_at), oldest first; a
    run of a custom suite never stands for a gate (harness.campaign.gate_states)."""
    r = RunRow
    q = (select(r.id, r.gate, r.status, r.partial, r.started_at)
         .where(_of_campaign(store, campaign), r.kind == "gate",
                or_(r.suite == "", r.suite.is_(None)))
         .order_by(r.started_at, r.id))
    return _read(store, q)


def campaign_run_ids(store: Store, campaign: str) -> list[int]:
    """Every run of the campaign, of any kind (for the evidence pack)."""
    q = select(RunRow.id).where(_of_campaign(store, campaign)).order_by(RunRow.id)
    with store.engine.connect() as conn:
        return [int(x) for x in conn.scalars(q)]


def gate_attempts(store: Store, campaign: str, gate: str) -> list[AttemptInfo]:
    """Every run of the gate in the campaign with the packaged suite (a custom suite never
    stands as a gate's verdict), oldest first, each with its effective verdict: as
    `gate status` lists them, since each attempt is another chance of a wrong PASS."""
    rows = [r for r in store_runs.runs(store, campaign=campaign, gate=gate, kind="gate")
            if not r.suite]
    rows.sort(key=lambda r: (r.started_at, r.id))
    return [AttemptInfo(id=r.id, status=r.status,
                        effective=store_runs.effective_verdict(store, r),
                        needs_signoff=bool(r.needs_signoff), forced=bool(r.forced),
                        partial=bool(r.partial), simulated=bool(r.simulated),
                        started_at=r.started_at, finished_at=r.finished_at) for r in rows]
