"""Measurement writers: benchmarks, request rows and series samples.

Request rows go in through the driver's executemany in batches (COPY on PostgreSQL), so a
G4 soak's million rows cost seconds, and a killed process loses at most one batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import String, Table, insert, select, text, update

from harness.store.db import Store
from harness.store.schema import BenchmarkRow, CellRow, RequestRow, SeriesRow

REQUEST_COLUMNS = (
    "idx", "instance", "warmup", "scheduled", "sent", "ttft", "ttft_text", "e2el",
    "prompt_tokens", "output_tokens", "usage_reported", "status", "error_kind", "error",
    "chunks", "finish_reason",
)


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
    defaults = {"instance": 0, "warmup": False, "usage_reported": True}
    return insert_request_values(
        store, benchmark_id,
        (tuple(row.get(c, defaults.get(c)) for c in REQUEST_COLUMNS) for row in rows), batch)


def insert_request_values(store: Store, benchmark_id: int, rows: Iterable[tuple[Any, ...]],
                          batch: int = 20000) -> int:
    """Bulk-insert request rows, each a tuple in REQUEST_COLUMNS order (the load
    generator's writer thread builds them straight from its records: at saturation a
    dict per request, then a tuple from it, cost ~3 us of the client's ~140 per request).

    Rows go through the driver's executemany with positional tuples: SQLAlchemy's
    per-row parameter processing costs ~3x more, and a G4 run stores millions of rows.
    On PostgreSQL (psycopg) they go through binary COPY instead: psycopg's executemany
    makes ~16 k rows/s, text COPY ~43 k, binary COPY ~90 k (SQLite ~115 k), the dumpers
    chosen once from the column types instead of per value.
    Each batch is its own transaction, so a killed process loses at most one batch.
    """
    columns = ("benchmark_id", *REQUEST_COLUMNS)
    n = 0
    buf: list[tuple[Any, ...]] = []
    with store.engine.connect() as probe:
        marker = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(probe.dialect.paramstyle)
        dialect, driver = probe.dialect.name, probe.dialect.driver
    names, placeholders = ", ".join(columns), ", ".join([marker or "?"] * len(columns))
    sql = f"INSERT INTO request ({names}) VALUES ({placeholders})" if marker else None

    types = _copy_types(store, columns) if (dialect, driver) == ("postgresql", "psycopg") \
        else None
    copy_sql = f"COPY request ({names}) FROM STDIN (FORMAT BINARY)"

    def flush() -> None:
        if not buf:
            return
        with store.engine.begin() as conn:
            if types is not None:  # PostgreSQL: binary COPY (benchmarks/store_pg.py)
                raw = conn.connection.driver_connection
                assert raw is not None
                with raw.cursor() as cur, cur.copy(copy_sql) as out:
                    out.set_types(types)
                    for r in buf:
                        out.write_row(r)
            elif sql is not None:
                conn.exec_driver_sql(sql, buf)
            else:  # a driver with named parameters: the portable (slower) Core path
                conn.execute(insert(_table(RequestRow)),
                             [dict(zip(columns, r, strict=True)) for r in buf])
        buf.clear()

    # The bounded text columns (what an engine says, e.g. finish_reason) are cut to their
    # length on every backend: PostgreSQL refuses a longer value (and with it the whole
    # COPY batch) where SQLite would keep it.
    bounded = [(columns.index(c.name), c.type.length) for c in _table(RequestRow).columns
               if isinstance(c.type, String) and c.type.length and c.name in columns]
    for row in rows:
        values = (benchmark_id, *row)
        for i, limit in bounded:
            v = values[i]
            if v is not None and len(v) > limit:
                values = (*values[:i], str(v)[:limit], *values[i + 1:])
        buf.append(values)
        n += 1
        if len(buf) >= batch:
            flush()
    flush()
    return n


def _copy_types(store: Store, columns: tuple[str, ...]) -> list[str]:
    """The server's type of each request column, as binary COPY needs them named: read
    from the catalog, so a migration that changes a column's type cannot desynchronise
    this from the table."""
    with store.engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT column_name, udt_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'request'"))
        found = {str(name): str(kind) for name, kind in rows}
    return [found[c] for c in columns]


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
