"""Store files frozen under a running gate (SQLite, Linux).

In WAL mode SQLite keeps the wal-index in `<db>-shm`, mmap()ed shared and written in
place. When that file becomes immutable (`chattr +i`) while a process has it mapped, the
kernel answers the next write to the mapping with SIGBUS (ext4's page_mkwrite refuses an
immutable inode; `chattr` writes the pages back first, so it is the very next write):
the process dies with no error and its run stays RUNNING. Nothing in SQLite or Python
can catch that signal. So, while this process has the store mapped writable, before each
use of a pooled connection and before a new connection's first statement (it would reuse
the mapping), `frozen_reason` looks (statvfs + statx, about 12 us, no file opened:
closing a file descriptor would drop SQLite's POSIX locks) and refuses with a StoreError
if the db, -wal or -shm became immutable / append-only or the filesystem read-only (that
last case not reproduced). Such connections are never closed either, because closing
runs a checkpoint that writes the -shm too: they are left to the kernel at exit, and the
next opener recovers the WAL as after a crash. What remains is a change landing inside
an open transaction (milliseconds); only leaving WAL for a rollback journal would remove
it (docs/design.md, Store).
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import struct
import sys
import threading
import weakref
from typing import Any

from harness.errors import StoreFrozenError

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


def frozen_reason(db: str) -> str | None:
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
        if self.gate_frozen or (self.gate_writable and frozen_reason(self.gate_path)):
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


def refuse_frozen(path: str) -> None:
    """Refuse before SQLite touches the -shm this process has mapped, if it was frozen."""
    if not _mapped_writable(path):
        return
    reason = frozen_reason(path)
    if reason is None:
        return
    _freeze(path)
    raise StoreFrozenError(f"cannot write: {reason} since gate opened it", file=path,
                           hint="make it writable again (chattr -i / remount rw)")


def on_connect(dbapi_conn: Any, _record: Any) -> None:
    """Before the first statement of a new connection (it would reuse the mapping)."""
    if isinstance(dbapi_conn, GuardedConnection):
        refuse_frozen(dbapi_conn.gate_path)
        dbapi_conn.gate_writable = frozen_reason(dbapi_conn.gate_path) is None
        with _LIVE_LOCK:
            _LIVE.setdefault(dbapi_conn.gate_path, weakref.WeakSet()).add(dbapi_conn)


def on_checkout(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """Before each use of a pooled connection."""
    if isinstance(dbapi_conn, GuardedConnection):
        refuse_frozen(dbapi_conn.gate_path)
