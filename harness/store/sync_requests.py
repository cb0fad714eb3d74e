"""A run's request rows for `gate sync`: their digest and their copy, at G4's size.

Why its own module: a G4 run holds a million request rows, and PostgreSQL's driver here is
pure-Python psycopg, whose per-value dumping and loading cost ~25-40 µs a row (a 1 M-row
copy or digest would take most of a minute). So rows never go through its dumpers and
loaders: they are put in PostgreSQL's binary COPY format by a packer compiled once from
the column types (~2 µs a row; harness/store/pgcopy.py, which the load generator's writer
uses too), which is at once what `COPY request FROM STDIN (FORMAT BINARY)` reads (sent by
a writer thread while the next batch is packed) and the canonical form the digest hashes.
PostgreSQL's side of a digest is `COPY (SELECT ...) TO STDOUT (FORMAT BINARY)` hashed as
it arrives; every other store packs its rows the same way, so one run's digest is equal
in both whatever the backend. Floats are normalised in
SQL before either (NaN as NULL, as SQLite stores it; -0.0 as 0.0).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from typing import Any

from sqlalchemy import Connection, insert

from harness.store.pgcopy import (
    SIGNATURE,
    TABLE,
    TRAILER,
    RowError,
    binary_matches,
    copy_in,
    driver_errors,
    is_psycopg,
    kind_of,
    pack_rows,
    packer,
    raw,
)
from harness.store.writer import REQUEST_COLUMNS

__all__ = ["RowError", "copy_requests", "digest_requests"]

BATCH = 20000


def _select(columns: Sequence[str], where: str, order: str, postgres: bool) -> str:
    """The raw SELECT of request rows, floats normalised (NaN: NULL, -0.0: 0.0)."""
    exprs = []
    for c in columns:
        cast = kind_of(c)[2]
        if cast == "float8":
            exprs.append(f"(NULLIF({c}, 'NaN'::float8) + 0)::float8" if postgres
                         else f"({c} + 0.0)")
        else:
            exprs.append(f"{c}::{cast}" if postgres else c)
    return f"SELECT {', '.join(exprs)} FROM request WHERE {where} ORDER BY {order}"


def digest_requests(conn: Connection, benchmark_id: int) -> bytes:
    """sha256 of a benchmark's request rows in idx order, without ids (see the module
    docstring: equal on every backend for equal rows)."""
    h = hashlib.sha256()
    where, order = f"benchmark_id = {int(benchmark_id)}", "idx, id"
    if is_psycopg(conn):
        sql = _select(REQUEST_COLUMNS, where, order, postgres=True)
        with driver_errors(conn), raw(conn).cursor() as cur, \
                cur.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)") as copy:
            for block in copy:
                h.update(block)
        return h.digest()
    pack = packer(REQUEST_COLUMNS)
    h.update(SIGNATURE)
    for part in _rows(conn, _select(REQUEST_COLUMNS, where, order, postgres=False)):
        h.update(pack_rows(pack, part))
    h.update(TRAILER)
    return h.digest()


def _rows(conn: Connection, sql: str) -> Iterator[Sequence[Any]]:
    """The rows of a raw SELECT in batches of the driver's own tuples: SQLite's straight
    from its cursor (no row objects: a G4 run's million rows read in ~1 s)."""
    if conn.dialect.name == "sqlite":
        with driver_errors(conn), closing(raw(conn).cursor()) as cur:
            cur.execute(sql)
            while rows := cur.fetchmany(BATCH):
                yield rows
        return
    res = conn.exec_driver_sql(sql, execution_options={"stream_results": True,
                                                       "yield_per": BATCH})
    for part in res.partitions(BATCH):
        yield [tuple(r) for r in part]


def _batches(src: Connection, bench: Mapping[int, int]) -> Iterator[Sequence[Any]]:
    """The source's request rows of the benchmarks `bench` maps, in batches of tuples
    (target benchmark id, *REQUEST_COLUMNS) of the driver's own values, the ids mapped by
    the database (CASE)."""
    case = " ".join(f"WHEN {int(a)} THEN {int(b)}" for a, b in bench.items())
    ids = ", ".join(str(int(a)) for a in bench)
    sql = (f"SELECT CASE benchmark_id {case} END, {', '.join(REQUEST_COLUMNS)} "
           f"FROM request WHERE benchmark_id IN ({ids}) ORDER BY benchmark_id, id")
    return _rows(src, sql)


def copy_requests(src: Connection, out: Connection, bench: Mapping[int, int]) -> int:
    """Copy the request rows of the benchmarks `bench` maps (source id -> target id) in
    the transaction of `out`: binary COPY on PostgreSQL, the driver's executemany with
    tuples elsewhere (as harness.store.writer). Returns how many rows were written."""
    if not bench:
        return 0
    columns = ("benchmark_id", *REQUEST_COLUMNS)
    names, n = ", ".join(columns), 0
    if is_psycopg(out) and binary_matches(out, columns):
        pack = packer(columns)

        def blocks() -> Iterator[bytes]:
            nonlocal n
            for rows in _batches(src, bench):
                yield pack_rows(pack, rows)
                n += len(rows)

        copy_in(out, columns, blocks())
        return n
    marker = {"qmark": "?", "format": "%s", "pyformat": "%s"}.get(out.dialect.paramstyle)
    for rows in _batches(src, bench):
        if marker:
            out.exec_driver_sql(f"INSERT INTO request ({names}) VALUES "
                                f"({', '.join([marker] * len(columns))})", rows)
        else:  # a driver with named parameters: the portable (slower) Core path
            out.execute(insert(TABLE), [dict(zip(columns, r, strict=True)) for r in rows])
        n += len(rows)
    return n
