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

Files frozen under a running gate (a SIGBUS SQLite cannot catch): harness/store/frozen.py.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from harness.errors import (
    SchemaTooNewError,
    StoreBusyError,
    StoreDamagedError,
    StoreError,
    StoreReadOnlyError,
    StoreUrlError,
)
from harness.store.frozen import GuardedConnection, frozen_reason, on_checkout, on_connect
from harness.store.heads import MIGRATIONS, quick_head

DEFAULT_URL = "sqlite:///./gate.db"
BUSY_TIMEOUT = 30  # seconds a `gate` waits for another one's write lock

RESTORE_HINT = "restore it from a backup"
MIGRATION_LOCK_KEY = 0x6761_7465_0001  # PostgreSQL advisory lock key: b"gate" + 1


def resolve_url(url: str | None) -> str:
    """The URL given beats GATE_DB beats ./gate.db; a bare path is taken as a SQLite file."""
    chosen = url or os.environ.get("GATE_DB") or DEFAULT_URL
    if "://" not in chosen:
        chosen = "sqlite:///" + str(Path(chosen).expanduser())
    return chosen


def absent_file(url: str | None) -> Path | None:
    """The SQLite file `url` names when it does not exist (a read-only command must not
    create an empty store where it was run by mistake); None for one that exists, for
    in-memory stores and for servers."""
    parsed = parse_url(resolve_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database or "").expanduser()
    return None if path.exists() else path


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    _wal(cur)
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    # Never mmap the database file itself (the default of Debian's libsqlite3, not of every
    # build): a store truncated under a mapping is a SIGBUS instead of an error.
    cur.execute("PRAGMA mmap_size=0")
    cur.close()


def _read_only_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """A store on read-only media: no journal mode switched (a write), reads only."""
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA mmap_size=0")
    cur.execute("PRAGMA query_only=ON")
    cur.close()


def read_only_uri(path: Path) -> str | None:
    """The SQLite URI to open an existing store through when this process cannot write
    its file or its directory (a read-only medium, an archive, chattr +i), else None.

    Opened normally, SQLite fails there before the first read: it switches the journal
    to WAL and creates the -wal / -shm files beside the store. `mode=ro` reads without
    writing; when there is no -shm and no -wal holding pages (no connection has the store
    open, and nothing left to fold back) in a directory that cannot take one,
    `immutable=1` as well, since SQLite cannot read a WAL-mode file there otherwise (no
    one else can write it there either; a -wal with pages is left to SQLite, which says
    it cannot open it rather than read the store without them)."""
    directory = path.parent
    if os.access(path, os.W_OK) and os.access(directory, os.W_OK):
        return None
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    settled = not shm.exists() and (not wal.exists() or wal.stat().st_size == 0)
    immutable = "&immutable=1" if settled and not os.access(directory, os.W_OK) else ""
    return f"sqlite:///file:{quote(str(path.resolve()))}?mode=ro{immutable}&uri=true"


def _wal(cur: Any) -> None:
    """Switch to WAL, waiting out the moments SQLite answers "locked" without its busy
    handler: while another connection runs the WAL's recovery or switches a brand-new
    file's journal mode (several `gate`s opening a new store at once; CI saw one refused
    within seconds, not after the busy timeout)."""
    end = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > end:
                raise
            time.sleep(0.05)


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
        frozen = frozen_reason(where) if code in (_READONLY, _PERM, _IOERR) else None
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
        if "password" in first:  # "no password supplied" / "password authentication failed"
            return StoreError(f"store failed: {first}", file=where,
                              hint="give the password in PGPASSWORD or ~/.pgpass (never in "
                                   "the URL)")
        return StoreError(f"store failed: {first}", file=where)
    return None


def _describe(url: str) -> str:
    """How a store is named in messages: a SQLite file's path, else the URL sans password."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return os.path.abspath(os.path.expanduser(parsed.database or ""))
    return parsed.render_as_string(hide_password=True)


# --- the engine -----------------------------------------------------------------------

_URL_PASSWORD = re.compile(r"(//[^/:@\s]*):[^@/\s]*@")


def _masked(url: str) -> str:
    """A URL as it may be shown even when SQLAlchemy cannot parse it: no password."""
    return _URL_PASSWORD.sub(r"\1:***@", url)


def refuse_password(parsed: URL) -> None:
    """A server URL carrying a password is refused: the URL is echoed on stdout, in logs,
    in `ps` and in shell history, so the store takes the password only from PGPASSWORD or
    ~/.pgpass (the driver reads both) and never sees it."""
    if parsed.password is not None and parsed.get_backend_name() != "sqlite":
        raise StoreUrlError(
            f"the store URL {parsed.render_as_string(hide_password=True)} carries a "
            f"password: gate never takes one there",
            hint="drop it from --db / GATE_DB and put it in PGPASSWORD or ~/.pgpass")


def parse_url(url: str) -> URL:
    """The URL parsed; a StoreUrlError (without its password) when it is not one."""
    try:
        return make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise StoreUrlError(f"not a database URL: {_masked(url)!r}",
                            hint="e.g. sqlite:///gate.db or "
                                 "postgresql+psycopg://user@/db?host=/run/postgresql"
                            ) from None


def make_engine(url: str) -> Engine:
    parsed = parse_url(url)
    refuse_password(parsed)
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
            path_db = Path(db or "").expanduser()
            read_only = read_only_uri(path_db) if file_db and path_db.is_file() else None
            engine = create_engine(read_only or url, connect_args=args)
            if file_db:
                path = _describe(url)

                def named(dbapi_conn: Any, record: Any) -> None:
                    if isinstance(dbapi_conn, GuardedConnection):
                        dbapi_conn.gate_path = path
                    on_connect(dbapi_conn, record)

                event.listen(engine, "connect", named)  # before the pragmas below
                event.listen(engine, "checkout", on_checkout)
            event.listen(engine, "connect",
                         _read_only_pragmas if read_only else _sqlite_pragmas)
        else:
            engine = create_engine(parsed, pool_pre_ping=True)
    except NoSuchModuleError:
        raise StoreUrlError(f"unknown database kind in {_describe(url)!r}") from None
    except ModuleNotFoundError as exc:
        raise StoreUrlError(f"database driver missing for {_describe(url)!r}: {exc.name}",
                            hint="for PostgreSQL: pip install 'psycopg>=3.1'") from None
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
    other one waits up to the busy timeout, then finds the schema made). PostgreSQL: a
    transaction-scoped advisory lock on a constant key (released at commit or when the
    connection dies; DDL is transactional, so the other one then finds the schema made)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})


def upgrade(engine: Engine, url: str) -> str:
    """Apply pending migrations; refuse a store from a newer harness.

    Checked without a lock first (a store at head, the usual case, opens read-only and
    without importing Alembic); a store that needs migrating, or is newer, is re-checked by
    Alembic's own reading of the migrations and migrated under `_lock_for_migration`.
    """
    quick = quick_head()
    if quick is not None:
        with engine.connect() as conn:
            if _revision(conn) == quick:
                return quick  # at head: no Alembic imported (harness.store.heads)
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
