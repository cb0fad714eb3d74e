"""Request rows in PostgreSQL's binary COPY format, packed by gate itself: the one way
request rows go into PostgreSQL, for the load generator's writer (harness.store.writer)
and for `gate sync` (harness.store.sync_requests), and the canonical form a run's
request digest hashes.

Why gate packs them: pure-Python psycopg dumps each value through its dumpers, ~25-40 µs
a row by `write_row` (a G4 run's million rows: most of a minute). A packer compiled once
from the column types makes a row in ~2 µs, and the block goes out through psycopg's
queued writer (libpq sends while the next block is packed).
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Boolean, Connection, Engine, Float, Integer, LargeBinary, String, Table, text

from harness.store.db import _describe, store_error
from harness.store.schema import RequestRow

_TABLE = RequestRow.__table__
assert isinstance(_TABLE, Table)
TABLE: Table = _TABLE
SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)  # flags, header extension
TRAILER = struct.pack(">h", -1)


class RowError(Exception):
    """A request row that cannot be put in the target's types (an integer past int4), or
    that the target refuses (too long, a duplicate)."""


class DuplicateRow(RowError):
    """A row whose (benchmark_id, idx) the target holds already (its unique key)."""


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


def kind_of(column: str) -> tuple[Callable[[Any], bytes], tuple[str, ...], str]:
    col_type = TABLE.c[column].type
    for base, pack, names, cast in _KINDS:
        if isinstance(col_type, base):
            return pack, names, cast
    raise TypeError(f"request.{column}: no binary packer for {col_type!r}")


# the fixed-size packers as one struct code each: (code, size)
_FIXED: dict[Callable[[Any], bytes], tuple[str, int]] = {
    _int4: ("i", 4), _float8: ("d", 8), _bool: ("?", 1)}


_PACKERS: dict[tuple[str, ...], Callable[[Sequence[Any]], bytes]] = {}


def packer(columns: Sequence[str]) -> Callable[[Sequence[Any]], bytes]:
    """Rows (tuples in `columns` order) -> their binary COPY rows (see _compile); compiled
    once per process and columns (the load generator's writer asks for every batch)."""
    key = tuple(columns)
    found = _PACKERS.get(key)
    if found is None:
        found = _PACKERS[key] = _compile(key)
    return found


def _compile(columns: Sequence[str]) -> Callable[[Sequence[Any]], bytes]:
    """Rows (tuples in `columns` order) -> their binary COPY rows.

    Compiled once from the column types: each run of fixed-size columns is one struct
    call when none of them is NULL (a request's usual case), each other value its
    packer's call; a row with a NULL among them goes value by value. ~2 µs a row where
    a call per value took ~4 (the source text is made here from the schema's types, no
    input reaches it)."""
    packs = [kind_of(c)[0] for c in columns]
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


def raw(conn: Connection) -> Any:
    """The driver's own connection under a SQLAlchemy one (COPY is not in the DB-API)."""
    found = conn.connection.driver_connection
    assert found is not None
    return found


@contextmanager
def driver_errors(conn: Connection) -> Iterator[None]:
    """The driver's errors where the store bypasses SQLAlchemy (raw cursors, COPY), as
    SQLAlchemy's hook would word them: a store fault is a StoreError; a row the target
    refuses a RowError (a DuplicateRow for its unique key)."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.split(".")[0] not in ("sqlite3", "psycopg"):
            raise
        err = store_error(exc, _describe(conn.engine.url.render_as_string(True)))
        if err is not None:
            raise err from exc
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if getattr(exc, "sqlstate", None) == "23505":  # unique_violation
            raise DuplicateRow(first) from exc
        raise RowError(first) from exc


def is_psycopg(conn: Connection) -> bool:
    return (conn.dialect.name, conn.dialect.driver) == ("postgresql", "psycopg")


_MATCHES: weakref.WeakKeyDictionary[Engine, dict[tuple[str, ...], bool]] = \
    weakref.WeakKeyDictionary()


def binary_matches(conn: Connection, columns: Sequence[str]) -> bool:
    """Whether the server's column types are those the packer writes (a migration that
    changes one falls back to the driver's INSERT rather than feeding COPY a wrong
    format). Read from the catalog once per engine and columns: the load generator's
    writer asks for every batch."""
    seen = _MATCHES.setdefault(conn.engine, {})
    key = tuple(columns)
    if key not in seen:
        found = {str(name): str(kind) for name, kind in conn.execute(text(
            "SELECT column_name, udt_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'request'"))}
        seen[key] = all(found.get(c) in kind_of(c)[1] for c in columns)
    return seen[key]


def copy_in(conn: Connection, columns: Sequence[str], blocks: Iterable[bytes]) -> None:
    """`COPY request (columns) FROM STDIN (FORMAT BINARY)` of packed row blocks in the
    transaction of `conn` (a psycopg connection whose types `binary_matches`); the header
    and trailer are added here. A block is packed while the one before it is sent."""
    from psycopg.copy import QueuedLibpqWriter

    with driver_errors(conn), raw(conn).cursor() as cur, \
            cur.copy(f"COPY request ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)",
                     writer=QueuedLibpqWriter(cur)) as copy:
        copy.write(SIGNATURE)
        for block in blocks:
            copy.write(block)
        copy.write(TRAILER)
