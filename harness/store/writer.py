"""Measurement writers: benchmarks, request rows and series samples.

Request rows go in through the driver's executemany in batches (binary COPY on
PostgreSQL, packed by harness.store.pgcopy), so a G4 soak's million rows cost seconds, and
a killed process loses at most one batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, String, Table, insert, select, update

from harness.store.db import Store
from harness.store.pgcopy import (
    DuplicateRow,
    binary_matches,
    copy_in,
    is_psycopg,
    pack_rows,
    packer,
)
from harness.store.schema import BenchmarkRow, CellRow, RequestRow, SeriesRow

REQUEST_COLUMNS = (
    "idx", "instance", "warmup", "scheduled", "sent", "ttft", "ttft_text", "e2el",
    "prompt_tokens", "output_tokens", "usage_reported", "status", "error_kind", "error",
    "chunks", "finish_reason",
)


COPY_BLOCK = 2000  # rows packed per block of a PostgreSQL COPY (see _blocks)


def _table(row: type[Any]) -> Table:
    table = row.__table__
    assert isinstance(table, Table)
    return table


def start_benchmark(store: Store, run_id: int, *, arm: str = "", layout: str = "", tier: int = 0,
                    repetition: int = 0, phase: str = "measured", driver: str = "gate",
                    params: Mapping[str, Any] | None = None) -> int:
    with store.session() as s:
        row = BenchmarkRow(run_id=run_id, arm=arm, layout=layout, tier=tier,
                           repetition=repetition, phase=phase, driver=driver,
                           params=dict(params or {}), summary={}, status="RUNNING",
                           started_at=time.time())
        s.add(row)
        s.flush()
        return row.id


def finish_benchmark(store: Store, benchmark_id: int, *, status: str, duration: float,
                     summary: Mapping[str, Any]) -> None:
    with store.session() as s:
        s.execute(update(BenchmarkRow).where(BenchmarkRow.id == benchmark_id)
                  .values(status=status, duration=duration, summary=dict(summary)))


def insert_requests(store: Store, benchmark_id: int, rows: Iterable[Mapping[str, Any]],
                    batch: int = 20000) -> int:
    """Bulk-insert request dicts (keys from REQUEST_COLUMNS; missing ones take defaults);
    see insert_request_values."""
    base = {**dict.fromkeys(REQUEST_COLUMNS), "instance": 0, "warmup": False,
            "usage_reported": True}
    values = itemgetter(*REQUEST_COLUMNS)  # one C call a row, not a .get per column
    return insert_request_values(store, benchmark_id, (values({**base, **row}) for row in rows),
                                 batch)


def insert_request_values(store: Store, benchmark_id: int, rows: Iterable[tuple[Any, ...]],
                          batch: int = 20000) -> int:
    """Bulk-insert request rows, each a tuple in REQUEST_COLUMNS order (the load
    generator's writer thread builds them straight from its records: at saturation a
    dict per request, then a tuple from it, cost ~3 us of the client's ~140 per request).
    Returns how many rows were stored.

    A row whose (benchmark, idx) the benchmark holds already is not stored again (the
    request's natural key, migration 0009): a pull resumed or a batch re-sent stores each
    request once, and the first stored copy stays.
    SQLite: the driver's executemany with positional tuples and ON CONFLICT DO NOTHING
    (SQLAlchemy's per-row parameter processing costs ~3x more, and a G4 run stores
    millions of rows). PostgreSQL (psycopg): binary COPY packed by harness.store.pgcopy,
    as `gate sync` copies them (psycopg's own dumpers cost ~10 µs a row, its executemany
    ~60); COPY cannot skip a conflict, so a batch it refuses for a duplicate is sent again
    without the rows already stored.
    Each batch is its own transaction, so a killed process loses at most one batch.
    """
    columns = ("benchmark_id", *REQUEST_COLUMNS)
    with store.engine.connect() as probe:
        copy = is_psycopg(probe) and binary_matches(probe, columns)
        marker = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(probe.dialect.paramstyle)
    names, placeholders = ", ".join(columns), ", ".join([marker or "?"] * len(columns))
    sql = (f"INSERT INTO request ({names}) VALUES ({placeholders}) "
           f"ON CONFLICT (benchmark_id, idx) DO NOTHING")
    pack = packer(columns) if copy else None

    def flush(buf: list[tuple[Any, ...]]) -> int:
        if pack is not None:  # PostgreSQL: binary COPY (benchmarks/store_pg.py)
            try:
                with store.engine.begin() as conn:
                    copy_in(conn, columns, _blocks(pack, buf))
                return len(buf)
            except DuplicateRow:
                with store.engine.begin() as conn:
                    fresh = _not_stored(conn, benchmark_id, buf)
                    if fresh:
                        copy_in(conn, columns, _blocks(pack, fresh))
                return len(fresh)
        with store.engine.begin() as conn:
            if marker:
                return max(conn.exec_driver_sql(sql, buf).rowcount, 0)
            # a driver with named parameters: the portable (slower) Core path
            fresh = _not_stored(conn, benchmark_id, buf)
            if fresh:
                conn.execute(insert(_table(RequestRow)),
                             [dict(zip(columns, r, strict=True)) for r in fresh])
            return len(fresh)

    # The bounded text columns (what an engine says, e.g. finish_reason) are cut to their
    # length on every backend: PostgreSQL refuses a longer value (and with it the whole
    # COPY batch) where SQLite would keep it.
    bounded = [(columns.index(c.name), c.type.length) for c in _table(RequestRow).columns
               if isinstance(c.type, String) and c.type.length and c.name in columns]
    n = 0
    buf: list[tuple[Any, ...]] = []
    for row in rows:
        values = (benchmark_id, *row)
        for i, limit in bounded:
            v = values[i]
            if v is not None and len(v) > limit:
                values = (*values[:i], str(v)[:limit], *values[i + 1:])
        buf.append(values)
        if len(buf) >= batch:
            n += flush(buf)
            buf = []
    if buf:
        n += flush(buf)
    return n


def _blocks(pack: Callable[[Sequence[Any]], bytes],
            rows: list[tuple[Any, ...]]) -> Iterator[bytes]:
    """A batch packed a block at a time as COPY asks for it: the server takes in one block
    while the next is packed (one block per batch left the two cores taking turns)."""
    for start in range(0, len(rows), COPY_BLOCK):
        yield pack_rows(pack, rows[start:start + COPY_BLOCK])


def _not_stored(conn: Connection, benchmark_id: int,
                rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """`rows` (benchmark_id, idx, ...) without those whose idx the benchmark holds or
    that an earlier row of `rows` has: each request once, the first copy kept."""
    idxs = [r[1] for r in rows]
    seen = set(conn.scalars(select(RequestRow.idx).where(
        RequestRow.benchmark_id == benchmark_id, RequestRow.idx >= min(idxs),
        RequestRow.idx <= max(idxs))))
    fresh = []
    for r in rows:
        if r[1] not in seen:
            seen.add(r[1])
            fresh.append(r)
    return fresh


def stored_idx(store: Store, benchmark_id: int) -> set[int]:
    """The idx of every request row a benchmark holds (what a resumed pull must skip)."""
    with store.engine.connect() as conn:
        return set(conn.scalars(select(RequestRow.idx)
                                .where(RequestRow.benchmark_id == benchmark_id)))


def interrupt_benchmark(store: Store, benchmark_id: int, note: Mapping[str, Any]) -> bool:
    """A phase whose gate died: RUNNING -> INTERRUPTED (kept, out of every count, as
    supersede_unpaired marks it), `note` added to its summary. False when it was not
    RUNNING (left as it is)."""
    with store.session() as s:
        row = s.get(BenchmarkRow, benchmark_id)
        if row is None or row.status != "RUNNING":
            return False
        row.status = "INTERRUPTED"
        row.summary = {**(row.summary or {}), **note}
        return True


def insert_series(store: Store, run_id: int, samples: Iterable[Mapping[str, Any]],
                  benchmark_id: int | None = None) -> int:
    """samples: dicts with source, metric, labels, at, value."""
    rows = [
        {"run_id": run_id, "benchmark_id": benchmark_id, "source": s["source"],
         "metric": s["metric"], "labels": dict(s.get("labels") or {}), "at": s["at"],
         "value": float(s["value"])}
        for s in samples
    ]
    if rows:
        with store.engine.begin() as conn:
            conn.execute(insert(_table(SeriesRow)), rows)
    return len(rows)


def series_of(store: Store, run_id: int, metric: str) -> dict[str, list[tuple[float, float]]]:
    """A run's samples of one metric, per source, as (at, value) in time order."""
    out: dict[str, list[tuple[float, float]]] = {}
    with store.session() as s:
        rows = s.execute(select(SeriesRow.source, SeriesRow.at, SeriesRow.value)
                         .where(SeriesRow.run_id == run_id, SeriesRow.metric == metric)
                         .order_by(SeriesRow.at)).all()
    for source, at, value in rows:
        out.setdefault(source, []).append((float(at), float(value)))
    return out


def benchmarks(store: Store, run_id: int) -> list[BenchmarkRow]:
    with store.session() as s:
        return list(s.scalars(select(BenchmarkRow).where(BenchmarkRow.run_id == run_id)
                              .order_by(BenchmarkRow.id)))


def requests(store: Store, benchmark_id: int) -> list[dict[str, Any]]:
    with store.engine.connect() as conn:
        res = conn.execute(select(RequestRow.__table__)
                           .where(RequestRow.benchmark_id == benchmark_id)
                           .order_by(RequestRow.idx))
        return [dict(r._mapping) for r in res]


def upsert_cell(store: Store, run_id: int, values: Mapping[str, Any]) -> None:
    """One decision per (run, layout, tier): a re-decision after more repetitions replaces
    the previous one within the same run (never another run's)."""
    with store.session() as s:
        row = s.scalar(select(CellRow).where(CellRow.run_id == run_id,
                                             CellRow.layout == values["layout"],
                                             CellRow.tier == values["tier"]))
        data = dict(values)
        data["at"] = time.time()
        if row is None:
            s.add(CellRow(run_id=run_id, **data))
        else:
            for k, v in data.items():
                setattr(row, k, v)


def cells(store: Store, run_id: int) -> list[CellRow]:
    with store.session() as s:
        return list(s.scalars(select(CellRow).where(CellRow.run_id == run_id)
                              .order_by(CellRow.layout, CellRow.tier)))


def supersede_pair(store: Store, run_id: int, layout: str, tier: int, repetition: int,
                   phase: str | None = None) -> int:
    """A repetition measured again (its phases were disturbed): every phase it stored so
    far (only those named `phase`, when given) is marked replaced, kept for the record
    and out of every count."""
    where = [BenchmarkRow.run_id == run_id, BenchmarkRow.layout == layout,
             BenchmarkRow.tier == tier, BenchmarkRow.repetition == repetition]
    if phase is not None:
        where.append(BenchmarkRow.phase == phase)
    with store.session() as s:
        marked = 0
        for b in s.scalars(select(BenchmarkRow).where(*where)):
            new = {"RUNNING": "INTERRUPTED", "FINISHED": "SUPERSEDED"}.get(b.status)
            if new is not None:
                b.status = new
                marked += 1
        return marked


def supersede_unpaired(store: Store, run_id: int) -> int:
    """Before a resume: the phases of every repetition whose two measured phases did not
    both finish are marked replaced (RUNNING -> INTERRUPTED, FINISHED -> SUPERSEDED), since
    the pair is measured again from the start; they stay in the store for the record, out
    of every count. Returns how many were marked."""
    with store.session() as s:
        rows = list(s.scalars(select(BenchmarkRow).where(BenchmarkRow.run_id == run_id)))
        done: dict[tuple[str, int, int], set[str]] = {}
        for b in rows:
            if b.phase == "measured" and b.status == "FINISHED":
                done.setdefault((b.layout, b.tier, b.repetition), set()).add(b.arm)
        marked = 0
        for b in rows:
            if len(done.get((b.layout, b.tier, b.repetition), set())) >= 2:
                continue
            new = {"RUNNING": "INTERRUPTED", "FINISHED": "SUPERSEDED"}.get(b.status)
            if new is not None:
                b.status = new
                marked += 1
        return marked
