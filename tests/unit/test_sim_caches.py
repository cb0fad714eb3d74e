"""Chained block hashes, the GPU prefix cache (LRU, capacity in tokens) and the external
tier's index (shared by two index objects on one directory, as two processes would)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from harness.sim.prefix_cache import GpuPrefixCache, block_hashes, chunk_keys
from harness.sim.prompt import PromptDigests, SqliteDigestStore
from harness.sim.tier import MemoryTierIndex, SqliteTierIndex


def test_hashes_chain_over_the_prefix() -> None:
    a = list(range(100))
    b = [*range(40), 999, *range(41, 100)]
    ha, hb = block_hashes(a, 16, "m|tp8"), block_hashes(b, 16, "m|tp8")
    assert len(ha) == 6  # full blocks only
    assert ha[:2] == hb[:2]  # tokens 0..31 equal
    assert all(x != y for x, y in zip(ha[2:], hb[2:], strict=True))  # every later block differs
    assert block_hashes(a, 16, "m|tp4") != ha  # another layout's KV is another key
    assert chunk_keys(ha, 2) == [ha[1], ha[3], ha[5]]


def test_gpu_cache_matches_leading_blocks_and_evicts_lru() -> None:
    cache = GpuPrefixCache(capacity_tokens=64, block_size=16)  # 4 blocks
    doc = block_hashes(list(range(48)), 16, "s")  # 3 blocks
    cache.insert(doc)
    assert cache.match(doc, max_blocks=3) == 3
    assert cache.match(doc, max_blocks=2) == 2  # vLLM always recomputes >= 1 token
    other = block_hashes(list(range(1000, 1032)), 16, "s")  # 2 blocks: 5 > 4
    cache.insert(other)
    assert len(cache) == 4 and cache.used_tokens == 64
    assert cache.match(doc, 3) == 2  # its tail block went first: the prefix survives
    assert cache.match(other, 2) == 2


def test_sqlite_tier_is_shared_and_outlives_its_writer(tmp_path: Path) -> None:
    keys = [bytes([i]) * 16 for i in range(10)]
    a = SqliteTierIndex(tmp_path, capacity_tokens=10_000)
    b = SqliteTierIndex(tmp_path, capacity_tokens=10_000)
    a.store(keys[:6], 256)
    assert b.lookup(keys) == 6  # b caught up with a's appends
    b.store(keys[6:], 256)
    assert a.lookup(keys) == 10
    a.close()
    b.close()
    c = SqliteTierIndex(tmp_path, capacity_tokens=10_000)  # a "restart"
    assert c.count() == 10 and c.lookup(keys) == 10
    d = SqliteTierIndex(tmp_path, capacity_tokens=10_000, reset=True)
    assert d.count() == 0
    assert c.lookup(keys) == 0  # the reset reached the other mirror too
    c.close()
    d.close()
    with sqlite3.connect(tmp_path / "tier-index.sqlite") as db:  # only keys, no KV bytes
        cols = [r[1] for r in db.execute("PRAGMA table_info(chunks)")]
    assert cols == ["seq", "key", "tokens", "stored", "used"]


def test_sqlite_tier_evicts_least_recently_used(tmp_path: Path) -> None:
    tier = SqliteTierIndex(tmp_path, capacity_tokens=4 * 256)
    old, new = [b"o" * 16, b"p" * 16], [b"q" * 16, b"r" * 16, b"s" * 16]
    tier.store(old, 256)
    tier.store(new, 256)  # 5 chunks > 4: the oldest goes
    assert tier.count() == 4
    assert tier.lookup(old) == 1  # the oldest document lost its tail chunk, not its head
    assert tier.lookup(new) == 3
    tier.close()


def test_memory_tier_matches_sqlite_semantics() -> None:
    tier = MemoryTierIndex(capacity_tokens=2 * 256)
    tier.store([b"a", b"b"], 256)
    assert tier.lookup([b"a", b"b", b"c"]) == 2
    tier.store([b"c"], 256)
    assert tier.count() == 2


def test_prompt_digests_persist_across_instances(tmp_path: Path) -> None:
    text = " the cache tier" * 200
    first = PromptDigests(16, "m|tp1", SqliteDigestStore(tmp_path))
    p1 = first.of_text(text)
    assert (first.hits, first.misses) == (0, 1)
    second = PromptDigests(16, "m|tp1", SqliteDigestStore(tmp_path))
    p2 = second.of_text(text)
    assert (second.hits, second.misses) == (1, 0)
    assert p1 == p2
    assert PromptDigests(16, "m|tp2").of_text(text).hashes != p1.hashes
