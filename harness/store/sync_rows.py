"""A run's rows for `gate sync` (harness.store.sync): the digest that says whether two
stores hold the same content of a run, and the copy of that content from one store into
another with every foreign key remapped through its parent's uid.

Why its own module: what counts as a run's content is one decision, taken here once for
the digest and for the copy alike. A run's tables are of three kinds:

- measured (MEASURED, and `request` through its benchmark): the run's content. It is
  digested, and replaced as a whole when a newer revision of the run arrives.
- merged (MERGED): rows added to a run after it finished without changing its revision
  (a sign-off; an engine process a later run of the campaign found gone). Merged by uid
  with the database's upsert, never digested.
- never copied: `run_lock` (a live process's lock).

Local integer ids never enter the digest: a row is its uid (a request: its benchmark's
uid and idx) and its values. Floats are compared as stored, but a NaN as NULL (as SQLite
stores it) and -0.0 as 0.0; JSON by its sorted text.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from sqlalchemy import Connection, Table, delete, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from harness.errors import StoreError
from harness.store.schema import Base
from harness.store.sync_requests import copy_requests, digest_requests

BATCH = 20000
# Per statement, never on a connection (Connection.execution_options changes the
# connection itself: its later INSERTs would go through a server-side cursor)
STREAM = {"stream_results": True, "yield_per": BATCH}
# Measured content, in an order that inserts parents first (series points at benchmark).
MEASURED = ("benchmark", "check", "cell", "series", "soak_window", "event", "host_fact",
            "artifact")
MERGED = ("signoff", "engine_process")
TOP = ("site", "campaign", "run")
NEVER = ("run_lock",)
REQUEST = "request"
# A run row's columns that are local to a store or to a live process, never content.
RUN_LOCAL = frozenset({"id", "campaign_id", "heartbeat_at"})
# An engine process a later run found gone: these take the newer word, nothing else does.
ENGINE_GONE = ("stopped_at", "note")


def table(name: str) -> Table:
    return Base.metadata.tables[name]


def upsert(conn: Connection, t: Table) -> sqlite.Insert | postgresql.Insert:
    """The dialect's INSERT with ON CONFLICT: the merge is the database's own upsert."""
    name = conn.dialect.name
    if name == "sqlite":
        return sqlite.insert(t)
    if name == "postgresql":
        return postgresql.insert(t)
    raise StoreError(f"stores sync on SQLite or PostgreSQL, not {name}")


# --- the digest --------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else value + 0.0  # -0.0 as 0.0
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    return value


def _canon(row: Mapping[str, Any]) -> str:
    """One row as text that two stores agree on: keys sorted, JSON sorted, bytes as hex."""
    return json.dumps({k: _plain(v) for k, v in row.items()}, sort_keys=True,
                      default=str, allow_nan=True)


def _portable(row: Mapping[Any, Any], bench_uid: Mapping[int, str]) -> dict[str, Any]:
    """A child row without its local ids: its benchmark (series) by uid."""
    out = {k: v for k, v in row.items() if k not in ("id", "run_id", "benchmark_id")}
    if "benchmark_id" in row:
        out["benchmark"] = bench_uid.get(row["benchmark_id"]) if row["benchmark_id"] else None
    return out


def benchmark_uids(conn: Connection, run_id: int) -> dict[int, str]:
    b = table("benchmark")
    return {int(i): str(u) for i, u in
            conn.execute(select(b.c.id, b.c.uid).where(b.c.run_id == run_id))}


def run_digest(conn: Connection, run_id: int) -> str:
    """sha256 of a run's measured content (its row and every measured row), the same in
    every store that holds the same content, whatever ids the rows have there."""
    h = hashlib.sha256()
    run = table("run")
    row = conn.execute(select(run).where(run.c.id == run_id)).one()._mapping
    h.update(b"run\n" + _canon({k: v for k, v in row.items() if k not in RUN_LOCAL}).encode())
    bench_uid = benchmark_uids(conn, run_id)
    for name in MEASURED:
        t = table(name)
        rows = sorted((str(r.uid), _canon(_portable(r._mapping, bench_uid)))
                      for r in conn.execute(select(t).where(t.c.run_id == run_id)))
        h.update(f"\n{name} {len(rows)}\n".encode())
        for _, line in rows:
            h.update(line.encode() + b"\n")
    for uid, bid in sorted((u, i) for i, u in bench_uid.items()):
        h.update(f"\nrequest {uid}\n".encode() + digest_requests(conn, bid))
    return h.hexdigest()


def measured_rows(conn: Connection, run_id: int) -> int:
    """How many measured rows a run has (its requests included): what a copy writes."""
    n = 0
    for name in MEASURED:
        t = table(name)
        n += int(conn.scalar(select(func.count()).select_from(t).where(t.c.run_id == run_id))
                 or 0)
    b, req = table("benchmark"), table(REQUEST)
    n += int(conn.scalar(select(func.count()).select_from(req).where(
        req.c.benchmark_id.in_(select(b.c.id).where(b.c.run_id == run_id)))) or 0)
    return n


# --- the copy ------------------------------------------------------------------------------

def _stream(conn: Connection, t: Table, run_id: int) -> Iterator[list[dict[str, Any]]]:
    res = conn.execute(select(t).where(t.c.run_id == run_id).order_by(t.c.id),
                       execution_options=STREAM)
    for part in res.partitions(BATCH):
        yield [dict(r._mapping) for r in part]


def delete_measured(out: Connection, run_id: int) -> None:
    """Remove a run's measured rows (children first): a newer revision replaces them."""
    b, req = table("benchmark"), table(REQUEST)
    out.execute(delete(req).where(req.c.benchmark_id.in_(
        select(b.c.id).where(b.c.run_id == run_id))))
    for name in reversed(MEASURED):
        t = table(name)
        out.execute(delete(t).where(t.c.run_id == run_id))


def copy_measured(src: Connection, out: Connection, src_run: int, dst_run: int) -> int:
    """Insert every measured row of `src_run` (read on `src`) as rows of `dst_run` (on
    `out`, in its transaction); returns how many rows were written."""
    n = 0
    src_bench = benchmark_uids(src, src_run)
    dst_bench: dict[int, int] = {}  # source benchmark id -> target benchmark id
    for name in MEASURED:
        t = table(name)
        for batch in _stream(src, t, src_run):
            for row in batch:
                del row["id"]
                row["run_id"] = dst_run
                if row.get("benchmark_id") is not None:
                    row["benchmark_id"] = dst_bench[row["benchmark_id"]]
            out.execute(insert(t), batch)
            n += len(batch)
        if name == "benchmark":
            by_uid = {u: i for i, u in benchmark_uids(out, dst_run).items()}
            dst_bench = {i: by_uid[u] for i, u in src_bench.items()}
    return n + copy_requests(src, out, dst_bench)


def merge_bookkeeping(src: Connection, out: Connection, src_run: int, dst_run: int, *,
                      dry_run: bool = False) -> int:
    """Sign-offs and engine processes of `src_run` merged into `dst_run` by uid: a
    sign-off either store has is kept (a set), an engine process the source knows to be
    gone is marked so. Returns how many sign-offs the target did not have."""
    added = 0
    for name in MERGED:
        t = table(name)
        for batch in _stream(src, t, src_run):
            have = set(out.scalars(select(t.c.uid).where(
                t.c.uid.in_([r["uid"] for r in batch]))))
            if name == "signoff":
                added += sum(1 for r in batch if r["uid"] not in have)
            if dry_run:
                continue
            for row in batch:
                del row["id"]
                row["run_id"] = dst_run
            ins = upsert(out, t)
            if name == "signoff":
                out.execute(ins.on_conflict_do_nothing(index_elements=["uid"]), batch)
            else:  # engine_process: a stop the target does not know yet is taken
                out.execute(ins.on_conflict_do_update(
                    index_elements=["uid"], set_={c: ins.excluded[c] for c in ENGINE_GONE},
                    where=t.c.stopped_at.is_(None) & ins.excluded.stopped_at.is_not(None)),
                    batch)
    return added
