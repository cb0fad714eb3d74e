"""Open the store: engine, SQLite pragmas, migrations applied on open, schema guard, and
every store fault as one StoreError line.

Only harness.store talks to the database. SQLite gets WAL (readers never block the
writer), a busy timeout (two `gate` processes wait instead of failing) and foreign keys.

Faults. A database error that is the store's fault, not the harness's (a damaged or
not-a-database file, a read-only file or directory, a full disk, a lock held past the
busy timeout, a lost server) becomes a StoreError naming the file and what to do, on every
path at once: the engine's `handle_error` hook sees errors of sessions, Core
`engine.begin()` / `connect()` writers, pandas reads and migrations alike. Integrity and
programming errors are left alone (callers rely on IntegrityError; the rest are bugs).

Files frozen under a running gate (SQLite, Linux). In WAL mode SQLite keeps the wal-index
in `<db>-shm`, mmap()ed shared and written in place. When that file becomes immutable
(`chattr +i`) while a process has it mapped, the kernel answers the next write to the
mapping with SIGBUS (ext4's page_mkwrite refuses an immutable inode; `chattr` writes the
pages back first, so it is the very next write): the process dies with no error and its
run stays RUNNING. Nothing in SQLite or Python can catch that signal. So, while this
process has the store mapped writable, before each use of a pooled connection and before
a new connection's first statement (it would reuse the mapping), `_frozen_reason` looks
(statvfs + statx, about 12 us, no file opened: closing a file descriptor would drop
SQLite's POSIX locks) and refuses with a StoreError if the db, -wal or -shm became
immutable / append-only or the filesystem read-only (that last case not reproduced). Such
connections are never closed either, because closing runs a checkpoint that writes the
-shm too: they are left to the kernel at exit, and the next opener recovers the WAL as
after a crash. What remains is a change landing inside an open transaction (milliseconds);
only leaving WAL for a rollback journal would remove it (docs/design.md, Store).
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import struct
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from harness.errors import (
    SchemaTooNewError,
    StoreBusyError,
    StoreDamagedError,
    StoreError,
    StoreFrozenError,
    StoreReadOnlyError,
    StoreUrlError,
)

DEFAULT_URL = "sqlite:///./gate.db"
MIGRATIONS = Path(__file__).parent / "migrations"
BUSY_TIMEOUT = 30  # seconds a `gate` waits for another one's write lock

RESTORE_HINT = "restore it from a backup"


def resolve_url(url: str | None) -> str:
    """The URL given beats GATE_DB beats ./gate.db; a bare path is taken as a SQLite file."""
    chosen = url or os.environ.get("GATE_DB") or DEFAULT_URL
    if "://" not in chosen:
        chosen = "sqlite:///" + str(Path(chosen).expanduser())
    return chosen


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    # Never mmap the database file itself (the default of Debian's libsqlite3, not of every
    # build): a store truncated under a mapping is a SIGBUS instead of an error.
    cur.execute("PRAGMA mmap_size=0")
    cur.close()


# --- store faults as StoreError ------------------------------------------------------

# SQLite primary result codes (https://sqlite.org/rescode.html)
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = (
    3, 5, 6, 8, 10, 11, 13, 14, 26)


def store_error(exc: BaseException, where: str) -> StoreError | None:
    """The StoreError for a database error that is the store's fault, else None.

    `exc` is a DB-API error or SQLAlchemy's wrapper of one; `where` names the store (a
    SQLite file's path, or the URL without its password)."""
    orig = getattr(exc, "orig", None) or exc
    if isinstance(orig, sqlite3.Error):
        if type(orig) not in (sqlite3.OperationalError, sqlite3.DatabaseError):
            return None  # integrity / programming / interface errors: not the store's fault
        said = str(orig)
        code = (getattr(orig, "sqlite_errorcode", 0) or 0) & 0xFF
        name = getattr(orig, "sqlite_errorname", "") or said
        if code in (_CORRUPT, _NOTADB) or "malformed" in said or "not a database" in said:
            return StoreDamagedError(f"is not a SQLite database or is damaged: {said}",
                                     file=where, hint=RESTORE_HINT)
        frozen = _frozen_reason(where) if code in (_READONLY, _PERM, _IOERR) else None
        if frozen:
            return StoreReadOnlyError(f"cannot write: {frozen}", file=where,
                                      hint="undo that (chattr -i / remount rw)")
        if code in (_READONLY, _PERM):
            return StoreReadOnlyError("cannot write: the file or its directory is read-only",
                                      file=where,
                                      hint="make both writable (SQLite keeps the -wal and "
                                           "-shm files beside it)")
        if code == _FULL:
            return StoreError("cannot write: the disk is full", file=where,
                              hint="free space on its filesystem; what was stored before is "
                                   "kept")
        if code in (_BUSY, _LOCKED):
            return StoreBusyError(f"locked by another process for longer than the busy "
                                  f"timeout ({BUSY_TIMEOUT} s)", file=where,
                                  hint="retry when it is done")
        if code == _CANTOPEN:
            return StoreError(f"cannot open it ({name})", file=where,
                              hint="check that it and its directory are readable and "
                                   "writable: SQLite keeps the -wal and -shm files beside it")
        if code == _IOERR:
            return StoreError(f"I/O error ({name})", file=where,
                              hint="check the disk (dmesg) and the file's permissions and "
                                   "attributes (ls -l, lsattr)")
        return StoreError(f"store failed: {said}", file=where)
    # Other backends: only what says the server or the link failed.
    if type(orig).__name__ == "OperationalError":  # psycopg / psycopg2 / pymysql alike
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        return StoreError(f"store failed: {first}", file=where)
    return None


def _describe(url: str) -> str:
    """How a store is named in messages: a SQLite file's path, else the URL sans password."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return os.path.abspath(os.path.expanduser(parsed.database or ""))
    return parsed.render_as_string(hide_password=True)


# --- files frozen under a running gate (see the module docstring) --------------------

_STATX_ATTR_IMMUTABLE = 0x10
_STATX_ATTR_APPEND = 0x20
_AT_FDCWD = -100


def _load_statx() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).statx
    except (OSError, AttributeError):  # no libc statx (glibc < 2.28, musl < 1.2.5)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint,
                   ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_statx = _load_statx()


def _file_attributes(path: str) -> int:
    """statx(2)'s stx_attributes (offset 8 of struct statx), 0 when unknown or absent."""
    if _statx is None:
        return 0
    buf = ctypes.create_string_buffer(256)
    if _statx(_AT_FDCWD, os.fsencode(path), 0, 0, buf) != 0:
        return 0
    return int(struct.unpack_from("=Q", buf, 8)[0])


def _frozen_reason(db: str) -> str | None:
    """Why SQLite can no longer write a store's files in place, or None."""
    try:
        if os.statvfs(os.path.dirname(db) or ".").f_flag & os.ST_RDONLY:
            return "its filesystem is read-only"
    except OSError:
        pass
    for suffix in ("", "-wal", "-shm"):
        attrs = _file_attributes(db + suffix)
        name = os.path.basename(db + suffix)
        if attrs & _STATX_ATTR_IMMUTABLE:
            return f"{name} is immutable (chattr +i)"
        if attrs & _STATX_ATTR_APPEND:
            return f"{name} is append-only (chattr +a)"
    return None


class GuardedConnection(sqlite3.Connection):
    """A pysqlite connection that knows its file and is never closed once frozen."""

    gate_path = ""
    gate_writable = False  # the store's files were writable when this connection opened
    gate_frozen = False

    def close(self) -> None:
        if self.gate_frozen or (self.gate_writable and _frozen_reason(self.gate_path)):
            _freeze(self.gate_path)
            return
        with _LIVE_LOCK:
            _LIVE.get(self.gate_path, weakref.WeakSet()).discard(self)
        super().close()


# Per store file, this process's open connections: SQLite shares one -shm mapping among
# them, so one connection's files frozen is every one's.
_LIVE: dict[str, weakref.WeakSet[GuardedConnection]] = {}
_LIVE_LOCK = threading.Lock()


def _live(path: str) -> list[GuardedConnection]:
    with _LIVE_LOCK:
        return list(_LIVE.get(path, ()))


def _mapped_writable(path: str) -> bool:
    return any(c.gate_writable for c in _live(path))


def _freeze(path: str) -> None:
    """Keep every connection of this process that mapped `path` writable alive for good:
    one extra reference, so neither close() nor deallocation ever runs SQLite's close."""
    for conn in _live(path):
        if conn.gate_writable and not conn.gate_frozen:
            conn.gate_frozen = True
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(conn))


def _refuse_frozen(path: str) -> None:
    """Refuse before SQLite touches the -shm this process has mapped, if it was frozen."""
    if not _mapped_writable(path):
        return
    reason = _frozen_reason(path)
    if reason is None:
        return
    _freeze(path)
    raise StoreFrozenError(f"cannot write: {reason} since gate opened it", file=path,
                           hint="make it writable again (chattr -i / remount rw)")


def _on_connect(dbapi_conn: Any, _record: Any) -> None:
    """Before the first statement of a new connection (it would reuse the mapping)."""
    if isinstance(dbapi_conn, GuardedConnection):
        _refuse_frozen(dbapi_conn.gate_path)
        dbapi_conn.gate_writable = _frozen_reason(dbapi_conn.gate_path) is None
        with _LIVE_LOCK:
            _LIVE.setdefault(dbapi_conn.gate_path, weakref.WeakSet()).add(dbapi_conn)


def _on_checkout(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """Before each use of a pooled connection."""
    if isinstance(dbapi_conn, GuardedConnection):
        _refuse_frozen(dbapi_conn.gate_path)


# --- the engine -----------------------------------------------------------------------

def make_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreUrlError(f"not a database URL: {url!r}",
                            hint="e.g. sqlite:///gate.db or postgresql://user@host/db") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            db = parsed.database
            file_db = bool(db) and db != ":memory:" and "mode=memory" not in url
            args: dict[str, Any] = {"timeout": BUSY_TIMEOUT}
            if file_db:
                parent = Path(db or "").expanduser().resolve().parent
                if not parent.is_dir():
                    raise StoreUrlError(f"directory {parent} does not exist")
                args["factory"] = GuardedConnection
            engine = create_engine(url, connect_args=args)
            if file_db:
                path = _describe(url)

                def named(dbapi_conn: Any, record: Any) -> None:
                    if isinstance(dbapi_conn, GuardedConnection):
                        dbapi_conn.gate_path = path
                    _on_connect(dbapi_conn, record)

                event.listen(engine, "connect", named)  # before the pragmas below
                event.listen(engine, "checkout", _on_checkout)
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError:
        raise StoreUrlError(f"unknown database kind in {url!r}") from None
    except ModuleNotFoundError as exc:
        raise StoreUrlError(f"database driver missing for {url!r}: {exc.name}") from None
    where = _describe(url)

    def on_error(ctx: ExceptionContext) -> None:
        if ctx.is_pre_ping:  # the pool's liveness probe: it reconnects, let it
            return
        err = store_error(ctx.original_exception, where)
        if err is not None:
            raise err from ctx.original_exception

    event.listen(engine, "handle_error", on_error)
    return engine


# --- migrations -----------------------------------------------------------------------

def _alembic_config(engine_conn: Any) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = engine_conn
    return cfg


def known_revisions() -> tuple[set[str], str]:
    from alembic.script import ScriptDirectory

    cfg = _alembic_config(None)
    script = ScriptDirectory.from_config(cfg)
    revs = {r.revision for r in script.walk_revisions()}
    return revs, str(script.get_current_head())


def _revision(conn: Connection) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    return str(row[0]) if row else None


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return _revision(conn)


def _lock_for_migration(conn: Connection) -> None:
    """Make this connection the only one migrating: two `gate`s opening a new store at the
    same moment must not both create its tables. SQLite: take the write lock now (the
    other one waits up to the busy timeout, then finds the schema made). Seam for other
    backends: PostgreSQL would `SELECT pg_advisory_xact_lock(<constant>)` here (released
    at commit); not built while no site runs one."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def upgrade(engine: Engine, url: str) -> str:
    """Apply pending migrations; refuse a store from a newer harness.

    Checked without a lock first (a store at head, the usual case, opens read-only);
    a store that needs migrating is re-checked and migrated under `_lock_for_migration`.
    """
    from alembic import command

    revs, head = known_revisions()

    def refuse_newer(current: str | None) -> None:
        if current is not None and current not in revs:
            raise SchemaTooNewError(
                f"store schema {current} is newer than this harness knows (head {head})",
                file=_describe(url),
                hint="upgrade gate-harness; the store was left untouched",
            )

    with engine.connect() as conn:
        current = _revision(conn)
        refuse_newer(current)
        if current == head:
            return head
        conn.rollback()
        _lock_for_migration(conn)
        current = _revision(conn)  # another process may have migrated meanwhile
        refuse_newer(current)
        if current != head:
            command.upgrade(_alembic_config(conn), "head")
        conn.commit()
    return head


class Store:
    """The results store. Hand it around; never keep a module-level one."""

    def __init__(self, url: str | None = None, *, migrate: bool = True) -> None:
        self.url = resolve_url(url)
        self.engine = make_engine(self.url)
        if migrate:
            upgrade(self.engine, self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A unit of work: committed on success, rolled back on error. A store fault is a
        StoreError (see the module docstring), from this or any other path."""
        with self._sessions() as s:
            try:
                yield s
                s.commit()
            except Exception:
                s.rollback()
                raise

    def revision(self) -> str | None:
        """The migration the store is at (None before the first one)."""
        return current_revision(self.engine)

    def file(self) -> Path | None:
        """The SQLite file holding this store (resolved); None for a server or in memory."""
        url = make_url(self.url)
        if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
            return Path(url.database).expanduser().resolve()
        return None

    def close(self) -> None:
        self.engine.dispose()
