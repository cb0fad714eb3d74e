"""A prompt as the engine sees it: its token count and its chained block hashes.

Tokenizing and hashing a 32k-token document costs the simulator a few milliseconds of
CPU, which at a high speed factor is a large slice of a modelled TTFT. The digest is
therefore cached by the text's own hash, in memory and, with `--cache-dir`, in a small
database several engine processes share: a document an engine saw before a cold restart
(the warm phase) is not tokenized again after it (the measured phase). It is a cache of
pure functions of the text, so sharing it changes no modelled number.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path
from typing import Protocol

from harness.errors import InfrastructureError
from harness.sim import tokenizer
from harness.sim.prefix_cache import HASH_BYTES, block_hashes


@dataclass(frozen=True)
class Prompt:
    n_tokens: int
    hashes: list[bytes]  # one per full block

    def __len__(self) -> int:
        return self.n_tokens


class DigestStore(Protocol):
    def get_digest(self, key: bytes) -> tuple[int, bytes] | None: ...

    def put_digest(self, key: bytes, n_tokens: int, hashes: bytes) -> None: ...


class PromptDigests:
    """text -> Prompt, memoised; `salt` ties the hashes to one model and TP degree."""

    MEMORY = 256  # prompts kept in process memory

    def __init__(self, block_size: int, salt: str, store: DigestStore | None = None) -> None:
        self.block_size = block_size
        self.salt = salt
        self.store = store
        self._memo: OrderedDict[bytes, Prompt] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def of_text(self, text: str) -> Prompt:
        data = text.encode("utf-8", errors="surrogatepass")
        key = blake2b(data, digest_size=16, key=self.salt.encode()[:64]).digest()
        found = self._memo.get(key)
        if found is not None:
            self._memo.move_to_end(key)
            self.hits += 1
            return found
        stored = self.store.get_digest(key) if self.store is not None else None
        if stored is not None:
            n, blob = stored
            prompt = Prompt(n, [blob[i:i + HASH_BYTES] for i in range(0, len(blob), HASH_BYTES)])
            self.hits += 1
        else:
            prompt = self.of_ids(tokenizer.encode(text))
            self.misses += 1
            if self.store is not None:
                self.store.put_digest(key, prompt.n_tokens, b"".join(prompt.hashes))
        self._memo[key] = prompt
        if len(self._memo) > self.MEMORY:
            self._memo.popitem(last=False)
        return prompt

    def of_ids(self, ids: list[int]) -> Prompt:
        return Prompt(len(ids), block_hashes(ids, self.block_size, self.salt))


class SqliteDigestStore:
    """`<cache_dir>/prompt-digests.sqlite`, shared by processes (WAL), size-capped."""

    FILE = "prompt-digests.sqlite"
    KEEP = 4096

    def __init__(self, cache_dir: Path) -> None:
        path = cache_dir / self.FILE
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # A simulator's own state, not a record: no fsync (a checkpoint's fsync stalled
            # the engine's event loop for 0.1-2 s inside measured phases), and its pages
            # kept in the process (the host may drop the page cache under it; a re-read
            # from disk is another stall). A process crash loses nothing; an OS crash may
            # lose the last writes of a simulated tier, which a new run recreates.
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("PRAGMA cache_size=-65536")
            self._db.execute("CREATE TABLE IF NOT EXISTS digests (key BLOB PRIMARY KEY, "
                             "n INTEGER NOT NULL, hashes BLOB NOT NULL, used REAL NOT NULL)")
        except (OSError, sqlite3.Error) as exc:
            raise InfrastructureError(f"cannot open the prompt cache: {exc}",
                                      stage="sim cache", command=str(path)) from exc

    def get_digest(self, key: bytes) -> tuple[int, bytes] | None:
        row = self._db.execute("SELECT n, hashes FROM digests WHERE key=?", (key,)).fetchone()
        return (int(row[0]), bytes(row[1])) if row else None

    def put_digest(self, key: bytes, n_tokens: int, hashes: bytes) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("INSERT OR REPLACE INTO digests(key, n, hashes, used) "
                             "VALUES (?, ?, ?, ?)", (key, n_tokens, hashes, time.time()))
            self._db.execute("DELETE FROM digests WHERE key IN (SELECT key FROM digests "
                             "ORDER BY used DESC LIMIT -1 OFFSET ?)", (self.KEEP,))
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
