"""Open the store: engine, SQLite pragmas, migrations applied on open, schema guard.

Only harness.store talks to the database. SQLite gets WAL (readers never block the
writer), a busy timeout (two `gate` processes wait instead of failing) and foreign keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from harness.errors import SchemaTooNewError, StoreError, UsageError

DEFAULT_URL = "sqlite:///./gate.db"
MIGRATIONS = Path(__file__).parent / "migrations"


def resolve_url(url: str | None) -> str:
    """--db beats GATE_DB beats ./gate.db; a bare path is taken as a SQLite file."""
    chosen = url or os.environ.get("GATE_DB") or DEFAULT_URL
    if "://" not in chosen:
        chosen = "sqlite:///" + str(Path(chosen).expanduser())
    return chosen


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(f"not a database URL: {url!r}", key="--db",
                         hint="e.g. sqlite:///gate.db or postgresql://user@host/db") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            db = parsed.database
            if db and db != ":memory:":
                parent = Path(db).expanduser().resolve().parent
                if not parent.is_dir():
                    raise UsageError(f"directory {parent} does not exist", key="--db")
            engine = create_engine(url, connect_args={"timeout": 30})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError:
        raise UsageError(f"unknown database kind in {url!r}", key="--db") from None
    except ModuleNotFoundError as exc:
        raise UsageError(f"database driver missing for {url!r}: {exc.name}", key="--db") from None
    return engine


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


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
        return str(row[0]) if row else None


def upgrade(engine: Engine, url: str) -> str:
    """Apply pending migrations; refuse a store from a newer harness."""
    from alembic import command

    try:
        revs, head = known_revisions()
        current = current_revision(engine)
        if current is not None and current not in revs:
            raise SchemaTooNewError(
                f"store schema {current} is newer than this harness knows (head {head})",
                file=url,
                hint="upgrade gate-harness; the store was left untouched",
            )
        if current != head:
            with engine.begin() as conn:
                command.upgrade(_alembic_config(conn), "head")
        return head
    except OperationalError as exc:
        raise StoreError(f"cannot open store: {exc.orig}", file=url) from None


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
        """A unit of work: committed on success, rolled back on error."""
        with self._sessions() as s:
            try:
                yield s
                s.commit()
            except Exception:
                s.rollback()
                raise

    def close(self) -> None:
        self.engine.dispose()
