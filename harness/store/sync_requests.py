"""A run's request rows for `gate sync`: their digest and their copy, at G4's size.

Why its own module: a G4 run holds a million request rows, and PostgreSQL's driver here is
pure-Python psycopg, whose per-value dumping and loading cost ~25-40 µs a row (a 1 M-row
copy or digest would take most of a minute). So rows never go through its dumpers and
loaders: they are put in PostgreSQL's binary COPY format by a packer compiled once from
the column types (~2 µs a row), which is at once what `COPY request FROM STDIN (FORMAT
BINARY)` reads (sent by a writer thread while the next batch is packed) and the
canonical form the digest hashes. PostgreSQL's side of a digest is `COPY (SELECT ...)
TO STDOUT (FORMAT BINARY)` hashed as it arrives; every other store packs its rows the same
way, so one run's digest is equal in both whatever the backend. Floats are normalised in
SQL before either (NaN as NULL, as SQLite stores it; -0.0 as 0.0).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from typing import Any

from sqlalchemy import Boolean, Connection, Float, Integer, LargeBinary, String, Table, insert

from harness.store.db import _describe, store_error
from harness.store.schema import RequestRow
from harness.store.writer import REQUEST_COLUMNS

BATCH = 20000
_TABLE = RequestRow.__table__
assert isinstance(_TABLE, Table)
TABLE: Table = _TABLE
SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)  # flags, header extension
TRAILER = struct.pack(">h", -1)


class RowError(Exception):
    """A request row that cannot be put in the target's types (an integer past int4)."""


_LEN = struct.Struct(">i").pack
_I4 = struct.Struct(">ii").pack
_F8 = struct.Struct(">id").pack
_NULL = _LEN(-1)
_TRUE, _FALSE = _LEN(1) + b"\x01", _LEN(1) + b"\x00"


def _int4(v: Any) -> bytes:
    return _NULL if v is None else _I4(4, v)


def _float8(v: Any) -> bytes:
    return _NULL if v is None else _F8(8, v)


def _bool(v: Any) -> bytes:
    return _NULL if v is None else (_TRUE if v else _FALSE)


def _bytea(v: Any) -> bytes:
    return _NULL if v is None else _LEN(len(v)) + bytes(v)


def _text(v: Any) -> bytes:
    if v is None:
        return _NULL
    b = str(v).encode()
    return _LEN(len(b)) + b


# (packer, PostgreSQL type names it writes, SQL cast that gives it) per ORM type
_KINDS: tuple[tuple[type[Any], Callable[[Any], bytes], tuple[str, ...], str], ...] = (
    (Boolean, _bool, ("bool",), "bool"),
    (Integer, _int4, ("int4",), "int4"),
    (Float, _float8, ("float8",), "float8"),
    (LargeBinary, _bytea, ("bytea",), "bytea"),
    (String, _text, ("varchar", "text"), "text"),
)


def _kind(column: str) -> tuple[Callable[[Any], bytes], tuple[str, ...], str]:
    col_type = TABLE.c[column].type
    for base, pack, names, cast in _KINDS:
        if isinstance(col_type, base):
            return pack, names, cast
    raise TypeError(f"request.{column}: no binary packer for {col_type!r}")


# the fixed-size packers as one struct code each: (code, size)
_FIXED: dict[Callable[[Any], bytes], tuple[str, int]] = {
    _int4: ("i", 4), _float8: ("d", 8), _bool: ("?", 1)}


def packer(columns: Sequence[str]) -> Callable[[Sequence[Any]], bytes]:
    """Rows (tuples in `columns` order) -> their binary COPY rows.

    Compiled once from the column types: each run of fixed-size columns is one struct
    call when none of them is NULL (a request's usual case), each other value its
    packer's call; a row with a NULL among them goes value by value. ~2 µs a row where
    a call per value took ~4 (the source text is made here from the schema's types, no
    input reaches it)."""
    packs = [_kind(c)[0] for c in columns]
    names = [f"v{i}" for i in range(len(columns))]
    env: dict[str, Any] = {"_join": b"".join, "_head": struct.pack(">h", len(columns))}
    parts, run = ["_head"], []
    for i, p in enumerate([*packs, None]):
        if p in _FIXED:
            run.append(i)
            continue
        if run:
            code = ">" + "".join("i" + _FIXED[packs[k]][0] for k in run)
            env[f"_s{i}"] = struct.Struct(code).pack
            args = ", ".join(f"{_FIXED[packs[k]][1]}, {names[k]}" for k in run)
            parts.append(f"_s{i}({args})")
            run = []
        if p is not None:
            env[f"_p{i}"] = p
            parts.append(f"_p{i}({names[i]})")
    fixed = [names[i] for i, p in enumerate(packs) if p in _FIXED] or ["0"]
    env["_slow"] = lambda row: b"".join([env["_head"], *[
        p(v) for p, v in zip(packs, row, strict=True)]])
    # the text is made above from the schema's types only: no input reaches it
    exec(f"def pack(row):\n"
         f"    {', '.join(names)}, = row\n"
         f"    if {' is None or '.join(fixed)} is None:\n"
         f"        return _slow(row)\n"
         f"    return _join(({', '.join(parts)},))\n", env)
    compiled: Callable[[Sequence[Any]], bytes] = env["pack"]
    return compiled


def pack_rows(pack: Callable[[Sequence[Any]], bytes], rows: Sequence[Sequence[Any]]) -> bytes:
    """A batch of rows as one block of binary COPY rows; a RowError for a value the
    format cannot hold (an integer past int4, a float in an integer column)."""
    try:
        return b"".join(map(pack, rows))
    except (struct.error, TypeError, ValueError, AttributeError) as exc:
        raise RowError(f"a request row cannot be written in the target's types: {exc}"
                       ) from None


def _select(columns: Sequence[str], where: str, order: str, postgres: bool) -> str:
    """The raw SELECT of request rows, floats normalised (NaN: NULL, -0.0: 0.0)."""
    exprs = []
    for c in columns:
        cast = _kind(c)[2]
        if cast == "float8":
            exprs.append(f"(NULLIF({c}, 'NaN'::float8) + 0)::float8" if postgres
                         else f"({c} + 0.0)")
        else:
            exprs.append(f"{c}::{cast}" if postgres else c)
    return f"SELECT {', '.join(exprs)} FROM request WHERE {where} ORDER BY {order}"


def _raw(conn: Connection) -> Any:
    raw = conn.connection.driver_connection
    assert raw is not None
    return raw


@contextmanager
def _driver_errors(conn: Connection) -> Iterator[None]:
    """The driver's errors where this module bypasses SQLAlchemy (raw cursors, COPY), as
    SQLAlchemy's hook would word them: a store fault is a StoreError; a row the target
    refuses (too long, out of range, a duplicate) a RowError, which refuses the run."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in ("sqlite3", "psycopg"):
            raise
        err = store_error(exc, _describe(conn.engine.url.render_as_string(True)))
        if err is not None:
            raise err from exc
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise RowError(first) from exc


def _is_psycopg(conn: Connection) -> bool:
    return (conn.dialect.name, conn.dialect.driver) == ("postgresql", "psycopg")


def digest_requests(conn: Connection, benchmark_id: int) -> bytes:
    """sha256 of a benchmark's request rows in idx order, without ids (see the module
    docstring: equal on every backend for equal rows)."""
    h = hashlib.sha256()
    where, order = f"benchmark_id = {int(benchmark_id)}", "idx, id"
    if _is_psycopg(conn):
        sql = _select(REQUEST_COLUMNS, where, order, postgres=True)
        with _driver_errors(conn), _raw(conn).cursor() as cur, \
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
        with _driver_errors(conn), closing(_raw(conn).cursor()) as cur:
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
    if _is_psycopg(out) and _binary_matches(out, columns):
        pack = packer(columns)
        from psycopg.copy import QueuedLibpqWriter

        with _driver_errors(out), _raw(out).cursor() as cur, \
                cur.copy(f"COPY request ({names}) FROM STDIN (FORMAT BINARY)",
                         writer=QueuedLibpqWriter(cur)) as copy:
            copy.write(SIGNATURE)
            for rows in _batches(src, bench):
                copy.write(pack_rows(pack, rows))
                n += len(rows)
            copy.write(TRAILER)
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


def _binary_matches(out: Connection, columns: Sequence[str]) -> bool:
    """Whether the server's column types are those the packer writes (a migration that
    changes one falls back to executemany rather than feeding COPY a wrong format)."""
    from sqlalchemy import text

    found = {str(name): str(kind) for name, kind in out.execute(text(
        "SELECT column_name, udt_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = 'request'"))}
    return all(found.get(c) in _kind(c)[1] for c in columns)
