"""Store faults inside the process: every path (ORM sessions, Core writers that use
engine.begin() / connect(), pandas reads) turns them into one StoreError naming the file.
Real SQLite files; the faults are made the way SQLite meets them."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError

from harness.cli.context import worded
from harness.errors import StoreBusyError, StoreError
from harness.loadgen.records import pack_chunks
from harness.store import db as store_db
from harness.store import runs as store_runs
from harness.store import writer
from harness.store.db import Store
from harness.store.schema import RunRow


def new_store(tmp_path: Path) -> tuple[Store, Path, int]:
    path = tmp_path / "gate.db"
    store = Store(f"sqlite:///{path}")
    run = store_runs.start_run(store, store_runs.NewRun(campaign="c", site="s", customer="",
                                                        kind="bench"))
    return store, path, run


def rows(n: int) -> list[dict[str, object]]:
    chunks = pack_chunks([0.01 * k for k in range(64)])
    return [{"idx": i, "scheduled": 0.0, "sent": 0.0, "ttft": 0.01, "e2el": 0.1,
             "prompt_tokens": 100, "output_tokens": 8, "status": 200, "chunks": chunks}
            for i in range(n)]


def test_a_store_lock_held_past_the_busy_timeout(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT", 0.2)
    store, path, run = new_store(tmp_path)
    bid = writer.start_benchmark(store, run)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another `gate` writing, for longer than we wait
    try:
        for write in (lambda: store_runs.heartbeat(store, run),  # ORM session
                      lambda: writer.insert_requests(store, bid, rows(3))):  # engine.begin()
            with pytest.raises(StoreError) as err:
                write()
            assert err.value.exit_code == 3
            assert isinstance(err.value, StoreBusyError)
            assert str(err.value) == (f"{path}: locked by another process for longer than "
                                      "the busy timeout (0.2 s) (retry when it is done)")
            # the command line names its own command (harness.cli.main prints `worded`)
            assert str(worded(err.value)) == (
                f"{path}: locked by another process for longer than the busy timeout "
                "(0.2 s) (`gate runs list` shows what is running; retry when it is done)")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    writer.insert_requests(store, bid, rows(3))  # and it works again once the lock is gone
    store.close()


def test_a_full_disk_on_every_write_path(tmp_path: Path) -> None:
    """SQLite's own cap (max_page_count) answers SQLITE_FULL exactly as a full disk does."""
    store, path, run = new_store(tmp_path)
    bid = writer.start_benchmark(store, run)

    @event.listens_for(store.engine, "connect")
    def cap(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(f"PRAGMA max_page_count={pages + 2}")

    store.engine.dispose()  # new connections, capped
    expected = (f"{path}: cannot write: the disk is full (free space on its filesystem; "
                "what was stored before is kept)")
    with pytest.raises(StoreError) as err:
        writer.insert_requests(store, bid, rows(5000))  # Core executemany in engine.begin()
    assert str(err.value) == expected
    with pytest.raises(StoreError) as err:
        writer.finish_benchmark(store, bid, status="FINISHED", duration=1.0,  # ORM session
                                summary={"big": "x" * 200_000})
    assert str(err.value) == expected
    assert len(store_runs.runs(store)) == 1  # reading still works, nothing half-written
    store.close()


def test_integrity_errors_are_left_to_their_callers(tmp_path: Path) -> None:
    store, _path, run = new_store(tmp_path)
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(RunRow(id=run, campaign_id=1, kind="bench", status="RUNNING", started_at=0.0))
    store.close()


def test_a_damaged_file_read_by_pandas_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "gate.db"
    path.write_bytes(b"not a database at all" * 512)
    with pytest.raises(StoreError, match="is not a SQLite database or is damaged"):
        Store(f"sqlite:///{path}")
    store = Store(f"sqlite:///{path}", migrate=False)
    with pytest.raises(StoreError) as err:
        pd.read_sql(select(RunRow.id), store.engine)
    assert str(err.value).startswith(f"{path}: is not a SQLite database or is damaged: "
                                     "file is not a database (restore it from a backup")


def test_store_files_frozen_under_an_open_store(tmp_path: Path) -> None:
    """gate.db made immutable while this process has the store open: each next use is
    refused before SQLite writes, on every path, and closing does not crash (the -shm
    itself is the SIGBUS case, tested through real processes in
    tests/integration/test_store_faults.py; the main file is safe to freeze in-process)."""
    store, path, run = new_store(tmp_path)
    bid = writer.start_benchmark(store, run)
    try:
        subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("chattr +i needs root and a filesystem with inode flags")
    try:
        expected = (f"{path}: cannot write: gate.db is immutable (chattr +i) since gate "
                    "opened it (make it writable again (chattr -i / remount rw))")
        for use in (lambda: store_runs.heartbeat(store, run),
                    lambda: writer.insert_requests(store, bid, rows(3)),
                    lambda: writer.requests(store, bid)):
            with pytest.raises(StoreError) as err:
                use()
            assert str(err.value) == expected
        store.close()  # the frozen connections are kept, not closed: no checkpoint, no crash
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    again = Store(f"sqlite:///{path}")  # writable again: the WAL is recovered
    assert store_runs.get_run(again, run).status == "RUNNING"
    again.close()
