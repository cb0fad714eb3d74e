"""The external KV tier's index: which chunks are stored, never the KV bytes themselves
(a 32k-token document is 8 GB of KV).

SqliteTierIndex keeps the index in `<tier_dir>/tier-index.sqlite` (WAL mode), so several
engine processes (two instances of a TP4x2 layout, or an engine and its restarted self)
read and append it concurrently and it outlives every process. Each process mirrors the
keys in memory and catches up with what others appended (rows after the last sequence
number it saw) before every lookup; an eviction or reset bumps a generation number that
makes every mirror reload. LRU touches are batched (flush()). MemoryTierIndex is the in-process
variant.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Protocol

from harness.errors import InfrastructureError

INDEX_FILE = "tier-index.sqlite"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS chunks (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "key BLOB NOT NULL UNIQUE, tokens INTEGER NOT NULL, stored REAL NOT NULL, "
    "used REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS chunks_used ON chunks(used)",
    "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO meta(k, v) VALUES ('generation', 0)",
)


class TierIndex(Protocol):
    def lookup(self, keys: list[bytes]) -> int:
        """How many leading keys are stored (and mark them used)."""

    def store(self, keys: list[bytes], tokens_each: int) -> None: ...

    def count(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class MemoryTierIndex:
    def __init__(self, capacity_tokens: int) -> None:
        self.capacity_tokens = capacity_tokens
        self._keys: dict[bytes, tuple[float, int]] = {}  # key -> (used, -seq)
        self._seq = 0
        self._tokens = 0

    def lookup(self, keys: list[bytes]) -> int:
        n = 0
        now = time.time()
        for k in keys:
            if k not in self._keys:
                break
            self._keys[k] = (now, self._keys[k][1])
            n += 1
        return n

    def store(self, keys: list[bytes], tokens_each: int) -> None:
        now = time.time()
        for k in keys:
            if k not in self._keys:
                self._tokens += tokens_each
                self._seq += 1
                self._keys[k] = (now, -self._seq)
            else:
                self._keys[k] = (now, self._keys[k][1])
        while self._tokens > self.capacity_tokens and self._keys:
            oldest = min(self._keys, key=self._keys.__getitem__)  # a document's tail first
            del self._keys[oldest]
            self._tokens -= tokens_each

    def count(self) -> int:
        return len(self._keys)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


class SqliteTierIndex:
    """Shared across processes; capacity enforced by evicting the least recently used
    chunks, a document's tail before its head (a prefix stays usable)."""

    def __init__(self, tier_dir: Path, capacity_tokens: int, *, reset: bool = False) -> None:
        self.path = tier_dir / INDEX_FILE
        self.capacity_tokens = capacity_tokens
        self._mirror: set[bytes] = set()
        self._seq = 0
        self._generation = -1
        self._touched: set[bytes] = set()
        try:
            tier_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # A simulator's own state, not a record: no fsync (a checkpoint's fsync stalled
            # the engine's event loop for 0.1-2 s inside measured phases), and its pages
            # kept in the process (the host may drop the page cache under it; a re-read
            # from disk is another stall). A process crash loses nothing; an OS crash may
            # lose the last writes of a simulated tier, which a new run recreates.
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("PRAGMA cache_size=-65536")
            with self._tx():
                for stmt in _SCHEMA:
                    self._db.execute(stmt)
                if reset:
                    self._db.execute("DELETE FROM chunks")
                    self._bump()
            self._catch_up()
        except (OSError, sqlite3.Error) as exc:
            raise InfrastructureError(f"cannot open the tier index: {exc}",
                                      stage="sim tier", command=str(self.path)) from exc

    # -- the mirror --------------------------------------------------------------------
    def _catch_up(self) -> None:
        gen = self._db.execute("SELECT v FROM meta WHERE k='generation'").fetchone()[0]
        if gen != self._generation:
            self._mirror.clear()
            self._seq = 0
            self._generation = gen
        rows = self._db.execute("SELECT seq, key FROM chunks WHERE seq > ? ORDER BY seq",
                                (self._seq,)).fetchall()
        if rows:
            self._mirror.update(r[1] for r in rows)
            self._seq = rows[-1][0]

    def _bump(self) -> None:
        self._db.execute("UPDATE meta SET v = v + 1 WHERE k='generation'")

    def lookup(self, keys: list[bytes]) -> int:
        self._catch_up()
        n = 0
        mirror = self._mirror
        for k in keys:
            if k not in mirror:
                break
            n += 1
        self._touched.update(keys[:n])
        return n

    def store(self, keys: list[bytes], tokens_each: int) -> None:
        if not keys:
            return
        now = time.time()
        with self._tx():
            self._db.executemany(
                "INSERT INTO chunks(key, tokens, stored, used) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET used=excluded.used",
                [(k, tokens_each, now, now) for k in keys])
            self._write_touches(now)
            total = self._db.execute("SELECT COALESCE(SUM(tokens), 0) FROM chunks").fetchone()[0]
            excess = int(total) - self.capacity_tokens
            if excess > 0:
                self._evict(excess)
        self._catch_up()

    def _evict(self, tokens: int) -> None:
        freed = 0
        doomed: list[int] = []
        for seq, n in self._db.execute("SELECT seq, tokens FROM chunks ORDER BY used, seq DESC"):
            if freed >= tokens:
                break
            doomed.append(seq)
            freed += int(n)
        self._db.executemany("DELETE FROM chunks WHERE seq=?", [(s,) for s in doomed])
        self._bump()

    def flush(self) -> None:
        """Write the batched LRU touches."""
        if self._touched:
            with self._tx():
                self._write_touches(time.time())

    def _write_touches(self, now: float) -> None:
        if self._touched:
            self._db.executemany("UPDATE chunks SET used=? WHERE key=?",
                                 [(now, k) for k in self._touched])
            self._touched.clear()

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._db.close()

    def _tx(self) -> _Tx:
        return _Tx(self._db)


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT: a writer takes the lock up front (no upgrade deadlock)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
