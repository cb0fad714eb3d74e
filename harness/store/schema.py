"""The store's tables as SQLAlchemy 2 typed ORM classes.

Times are UTC epoch seconds (float) so SQLite and PostgreSQL agree and pandas reads them
without a timezone dance. Request rows are written with Core bulk inserts (see
`harness.store.writer`), never as ORM objects: a G4 run holds millions of them.
Each table is created by a migration in migrations/versions; change both together:
tests/unit/test_store_migrations.py runs Alembic's autogenerate comparison of a store
migrated to head against this metadata and fails on any difference.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


def new_uid() -> str:
    """An entity's globally unique id (uuid4, hex): every row that travels (a site, a
    campaign, a run and each of its checks, cells, benchmarks, sign-offs, events, artifacts,
    host facts, engine processes, series samples and soak windows) gets one at creation, so
    results from many sites and stores merge without collisions. A request has none: it is
    (its benchmark's uid, idx)."""
    return uuid.uuid4().hex


class SiteRow(Base):
    __tablename__ = "site"
    id: Mapped[int] = mapped_column(primary_key=True)
    # globally unique (new_uid): rows of many stores merge without collisions; a site's
    # name stays unique in a store (a site is the top of the tree)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    customer: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[float] = mapped_column(Float)


class CampaignRow(Base):
    """A campaign's name is unique within its site, not globally: two sites may each have a
    `poc` (harness.store.runs.find_campaigns resolves SITE/CAMPAIGN and bare names)."""

    __tablename__ = "campaign"
    __table_args__ = (UniqueConstraint("site_id", "name", name="uq_campaign_site_name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    site_id: Mapped[int] = mapped_column(ForeignKey("site.id"))
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[float] = mapped_column(Float)


class RunRow(Base):
    __tablename__ = "run"
    id: Mapped[int] = mapped_column(primary_key=True)  # unique in this store only
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), index=True)
    # The revision of its measured content (checks, cells, benchmarks and requests, windows,
    # events): `gate resume` and `gate runs abort` bump it; a sign-off is a row of its own
    # and never does.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    kind: Mapped[str] = mapped_column(String(16))  # gate | bench | import
    gate: Mapped[str | None] = mapped_column(String(4), index=True)
    status: Mapped[str] = mapped_column(String(16))  # RUNNING | FINISHED | ABORTED
    verdict: Mapped[str | None] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    partial: Mapped[bool] = mapped_column(Boolean, default=False)
    checks_selected: Mapped[int] = mapped_column(Integer, default=0)
    checks_total: Mapped[int] = mapped_column(Integer, default=0)
    forced: Mapped[bool] = mapped_column(Boolean, default=False)
    needs_signoff: Mapped[bool] = mapped_column(Boolean, default=False)
    trigger: Mapped[str] = mapped_column(String(16), default="manual")
    simulated: Mapped[bool] = mapped_column(Boolean, default=False)
    config_hash: Mapped[str] = mapped_column(String(64), default="")
    config_json: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    harness_version: Mapped[str] = mapped_column(String(32), default="")
    operator: Mapped[str] = mapped_column(String(200), default="")
    hosts: Mapped[list[Any]] = mapped_column(JSON, default=list)
    args: Mapped[list[Any]] = mapped_column(JSON, default=list)
    pid: Mapped[int | None] = mapped_column(Integer)
    hostname: Mapped[str] = mapped_column(String(200), default="")
    artifact_dir: Mapped[str] = mapped_column(Text, default="")
    started_at: Mapped[float] = mapped_column(Float)
    finished_at: Mapped[float | None] = mapped_column(Float)
    heartbeat_at: Mapped[float | None] = mapped_column(Float)
    # Another suite than the packaged one (tests only): path and digest. Never a verdict.
    suite: Mapped[str] = mapped_column(Text, default="")
    plan: Mapped[list[Any] | None] = mapped_column(JSON)  # the check ids the suite declared
    # Config values set on the command line ("dotted.key=value"), part of config_json too.
    overrides: Mapped[list[Any]] = mapped_column(JSON, default=list)


class RunLockRow(Base):
    """One row per campaign while a gate run holds it; the primary key is the lock."""

    __tablename__ = "run_lock"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"))
    pid: Mapped[int] = mapped_column(Integer)
    hostname: Mapped[str] = mapped_column(String(200))
    acquired_at: Mapped[float] = mapped_column(Float)
    heartbeat_at: Mapped[float] = mapped_column(Float)


class CheckRow(Base):
    __tablename__ = "check"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    nodeid: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text, default="")
    host: Mapped[str | None] = mapped_column(String(200))
    outcome: Mapped[str] = mapped_column(String(16))  # PASS STOP-LOSS INCONCLUSIVE ERROR SKIPPED
    message: Mapped[str] = mapped_column(Text, default="")
    expected: Mapped[str] = mapped_column(Text, default="")
    measured: Mapped[str] = mapped_column(Text, default="")
    stage: Mapped[str] = mapped_column(String(64), default="call")
    duration: Mapped[float] = mapped_column(Float, default=0.0)
    finished_at: Mapped[float] = mapped_column(Float)
    # message / expected / measured as harness.reasons JSON (migration 0006)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class HostFactRow(Base):
    __tablename__ = "host_fact"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    host: Mapped[str] = mapped_column(String(200))
    key: Mapped[str] = mapped_column(String(200))
    value: Mapped[Any] = mapped_column(JSON, nullable=True)  # as 0001 made it
    simulated: Mapped[bool] = mapped_column(Boolean, default=False)


class EventRow(Base):
    __tablename__ = "event"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    source: Mapped[str] = mapped_column(String(32))  # ansible | action | harness
    name: Mapped[str] = mapped_column(Text)  # playbook / task / step
    host: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))  # ok changed failed unreachable skipped
    message: Mapped[str] = mapped_column(Text, default="")
    duration: Mapped[float] = mapped_column(Float, default=0.0)
    at: Mapped[float] = mapped_column(Float)


class SignoffRow(Base):
    __tablename__ = "signoff"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    role: Mapped[str] = mapped_column(String(16))  # vendor | customer | reviewer
    name: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[float] = mapped_column(Float)
    os_user: Mapped[str] = mapped_column(String(200), default="")  # who ran `gate signoff`
    hostname: Mapped[str] = mapped_column(String(200), default="")  # and where


class ArtifactRow(Base):
    __tablename__ = "artifact"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(64), default="")
    host: Mapped[str | None] = mapped_column(String(200))
    at: Mapped[float] = mapped_column(Float)


class BenchmarkRow(Base):
    """One load phase: arm x layout x tier x repetition x phase."""

    __tablename__ = "benchmark"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    arm: Mapped[str] = mapped_column(String(32), default="")
    layout: Mapped[str] = mapped_column(String(64), default="")
    tier: Mapped[int] = mapped_column(Integer, default=0)
    repetition: Mapped[int] = mapped_column(Integer, default=0)
    phase: Mapped[str] = mapped_column(String(16), default="measured")
    driver: Mapped[str] = mapped_column(String(32), default="gate")
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(16), default="RUNNING")
    started_at: Mapped[float] = mapped_column(Float)
    duration: Mapped[float | None] = mapped_column(Float)


class RequestRow(Base):
    """One request. Offsets are seconds from the benchmark's start (monotonic clock)."""

    __tablename__ = "request"
    # Its natural key (migration 0009): a row stored twice is one row; benchmark_id leads
    # the index, which serves every lookup by benchmark.
    __table_args__ = (Index("uq_request_benchmark_idx", "benchmark_id", "idx", unique=True),)
    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id"))
    idx: Mapped[int] = mapped_column(Integer)
    instance: Mapped[int] = mapped_column(Integer, default=0)
    warmup: Mapped[bool] = mapped_column(Boolean, default=False)
    scheduled: Mapped[float] = mapped_column(Float)
    sent: Mapped[float | None] = mapped_column(Float)
    ttft: Mapped[float | None] = mapped_column(Float)  # first chunk with choices (vLLM)
    ttft_text: Mapped[float | None] = mapped_column(Float)  # first chunk with text
    e2el: Mapped[float | None] = mapped_column(Float)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    usage_reported: Mapped[bool] = mapped_column(Boolean, default=True)
    status: Mapped[int | None] = mapped_column(Integer)
    error_kind: Mapped[str | None] = mapped_column(String(32))
    error: Mapped[str | None] = mapped_column(Text)
    chunks: Mapped[bytes | None] = mapped_column(LargeBinary)  # float32 chunk offsets
    finish_reason: Mapped[str | None] = mapped_column(String(32))  # length | stop | ...


class SeriesRow(Base):
    """Time series samples: /metrics scrapes, diskstats bandwidth, GPU utilisation."""

    __tablename__ = "series"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    benchmark_id: Mapped[int | None] = mapped_column(ForeignKey("benchmark.id"), index=True)
    source: Mapped[str] = mapped_column(String(200))  # endpoint URL or host
    metric: Mapped[str] = mapped_column(String(200))
    labels: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    at: Mapped[float] = mapped_column(Float)
    value: Mapped[float] = mapped_column(Float)


class CellRow(Base):
    """G3: one layout x tier decision with its estimates and intervals."""

    __tablename__ = "cell"
    __table_args__ = (UniqueConstraint("run_id", "layout", "tier"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    layout: Mapped[str] = mapped_column(String(64))
    tier: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    repetitions: Mapped[int] = mapped_column(Integer, default=0)
    n_baseline: Mapped[int] = mapped_column(Integer, default=0)
    n_accelerated: Mapped[int] = mapped_column(Integer, default=0)
    ttft_p50_baseline: Mapped[float | None] = mapped_column(Float)
    ttft_p50_accelerated: Mapped[float | None] = mapped_column(Float)
    drop: Mapped[float | None] = mapped_column(Float)
    drop_lo: Mapped[float | None] = mapped_column(Float)
    drop_hi: Mapped[float | None] = mapped_column(Float)
    thr_baseline: Mapped[float | None] = mapped_column(Float)
    thr_accelerated: Mapped[float | None] = mapped_column(Float)
    gain: Mapped[float | None] = mapped_column(Float)
    gain_lo: Mapped[float | None] = mapped_column(Float)
    gain_hi: Mapped[float | None] = mapped_column(Float)
    confidence: Mapped[float] = mapped_column(Float, default=0.95)
    rule: Mapped[str] = mapped_column(Text, default="")
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    at: Mapped[float] = mapped_column(Float)


class SoakWindowRow(Base):
    """G4: one window of a soak, summarised as harness.loadgen.soak_windows cuts it, stored once:
    (run, idx) is unique, so a window pulled again (or after a resume) replaces itself
    (harness.store.windows.upsert_windows)."""

    __tablename__ = "soak_window"
    __table_args__ = (UniqueConstraint("run_id", "idx", name="uq_soak_window_run_idx"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    # globally unique, as run.uid: windows of many stores' runs merge without collisions
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    idx: Mapped[int] = mapped_column(Integer)  # window index from 0
    start_s: Mapped[float] = mapped_column(Float)  # seconds from the soak's start
    length_s: Mapped[float] = mapped_column(Float)
    requests: Mapped[int] = mapped_column(Integer)
    errors: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # error kind -> count
    ttft_p50_s: Mapped[float | None] = mapped_column(Float)
    ttft_p99_s: Mapped[float | None] = mapped_column(Float)
    tpot_p50_s: Mapped[float | None] = mapped_column(Float)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Counter deltas over the window (None: not sampled in it)
    external_hit_tokens: Mapped[float | None] = mapped_column(Float)  # engine's KV-tier hits
    device_read_bytes: Mapped[float | None] = mapped_column(Float)  # storage hosts' devices
    kv_volume_read_bytes: Mapped[float | None] = mapped_column(Float)  # GPU hosts' KV volume
    engine_rss_bytes: Mapped[float | None] = mapped_column(Float)  # at the window's end
    engine_restarts: Mapped[int] = mapped_column(Integer, default=0)
    counters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # raw, per instance
    pulled_at: Mapped[float] = mapped_column(Float)  # when the gate stored it


class EngineProcessRow(Base):
    """An engine process a gate run started (found listening on an arm's endpoint right
    after a start or restart action), so the run, or the next resume / abort / run, can
    make sure it is gone. (host, pid, start_ticks) names the process: a recycled pid has
    another start time and is never signalled."""

    __tablename__ = "engine_process"
    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True, index=True, default=new_uid)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id"), index=True)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    start_ticks: Mapped[int] = mapped_column(BigInteger)
    arm: Mapped[str] = mapped_column(String(32), default="")
    layout: Mapped[str] = mapped_column(String(64), default="")
    instance: Mapped[int] = mapped_column(Integer, default=0)
    url: Mapped[str] = mapped_column(Text, default="")
    started_at: Mapped[float] = mapped_column(Float)
    stopped_at: Mapped[float | None] = mapped_column(Float)
    note: Mapped[str] = mapped_column(Text, default="")
