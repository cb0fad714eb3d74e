"""A request row's natural key, (benchmark_id, idx), is unique (migration 0009): every
writer stores a request once however often it is handed over (a resumed pull, a batch
sent again), keeping the first copy; a store holding duplicates from before migrates
without losing a distinct row (exact copies go, distinct ones get new idx, on record);
request rows on PostgreSQL go through the one binary packer (harness.store.pgcopy).
On SQLite and PostgreSQL (`store_url`, tests/pg_support)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from alembic import command
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError

from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store.db import _alembic_config, known_revisions
from harness.store.schema import BenchmarkRow, RequestRow


def run_and_bench(store: Store) -> tuple[int, int]:
    rid = store_runs.start_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="bench"))
    return rid, writer.start_benchmark(store, rid, tier=4)


def row(idx: int, ttft: float = 0.25, finish: str = "length") -> dict[str, Any]:
    return {"idx": idx, "scheduled": idx * 0.1, "ttft": ttft, "chunks": b"\x00\x01",
            "status": 200, "finish_reason": finish, "error_kind": None}


def stored(store: Store, bid: int) -> list[tuple[int, float | None]]:
    return [(r["idx"], r["ttft"]) for r in writer.requests(store, bid)]


def test_a_request_stored_again_is_stored_once_the_first_copy_kept(store_url: str) -> None:
    store = Store(store_url)
    _, bid = run_and_bench(store)
    assert writer.insert_requests(store, bid, [row(i) for i in range(5)], batch=3) == 5
    # a pull resumed from an older offset: two of these are stored, one is new, and the
    # batch repeats one request itself (the batch size splits it across two batches)
    again = [row(3, ttft=9.0), row(4, ttft=9.0), row(5), row(5, ttft=9.0), row(6)]
    assert writer.insert_requests(store, bid, again, batch=3) == 2
    assert stored(store, bid) == [(0, 0.25), (1, 0.25), (2, 0.25), (3, 0.25), (4, 0.25),
                                  (5, 0.25), (6, 0.25)]
    assert writer.insert_requests(store, bid, [row(i) for i in range(7)]) == 0
    assert len(stored(store, bid)) == 7
    # the same idx in another benchmark is another request
    _, other = run_and_bench(store)
    assert writer.insert_requests(store, other, [row(0)]) == 1
    store.close()


def test_the_database_itself_refuses_a_second_row_of_one_key(store_url: str) -> None:
    """Not vacuous: the key is the database's, not only the writer's care."""
    store = Store(store_url)
    _, bid = run_and_bench(store)
    writer.insert_requests(store, bid, [row(0)])
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(RequestRow(benchmark_id=bid, idx=0, scheduled=0.0))
    store.close()


def test_values_survive_the_packer_as_they_went_in(store_url: str) -> None:
    """PostgreSQL's rows go through gate's own binary packer: every column's value (NULLs,
    NaN, booleans, bytes, a text past its column's length) reads back as SQLite keeps it."""
    store = Store(store_url)
    _, bid = run_and_bench(store)
    full = (7, 1, True, 0.5, 0.75, None, 1.25, 2.5, 32000, 16, False, 503, "timeout",
            "it timed out", b"\x00\xff", "x" * 40)
    holes = (8, 0, False, 1.0, None, None, None, math.nan, None, None, True, None, None,
             None, None, None)
    assert writer.insert_request_values(store, bid, [full, holes]) == 2
    got = [tuple(None if isinstance(v, float) and math.isnan(v) else v  # SQLite: NULL
                 for v in (r[c] for c in writer.REQUEST_COLUMNS))
           for r in writer.requests(store, bid)]
    assert got == [(*full[:-1], "x" * 32), (*holes[:7], None, *holes[8:])]
    store.close()


def store_at_0008_with_duplicates(url: str) -> tuple[Store, int, int]:
    """A store as 0008 left it (no key), holding doubled requests: idx 1 three times
    (twice the same, once other), idx 2 twice the same; a second benchmark doubled alike."""
    store = Store(url)
    _, bid = run_and_bench(store)
    _, other = run_and_bench(store)
    with store.engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0008")
    cols = ", ".join(("benchmark_id", *writer.REQUEST_COLUMNS))
    put = text(f"INSERT INTO request ({cols}) VALUES "
               f"({', '.join(':' + c for c in ('benchmark_id', *writer.REQUEST_COLUMNS))})")

    def r(b: int, idx: int, ttft: float) -> dict[str, Any]:
        values = dict.fromkeys(writer.REQUEST_COLUMNS)
        values.update(benchmark_id=b, idx=idx, instance=0, warmup=False, scheduled=0.1 * idx,
                      ttft=ttft, e2el=math.nan, usage_reported=True, chunks=b"\x01")
        return values

    with store.engine.begin() as conn:
        for b in (bid, other):
            conn.execute(put, [r(b, 0, 0.2), r(b, 1, 0.2), r(b, 1, 0.2), r(b, 1, 0.9),
                               r(b, 2, 0.3), r(b, 2, 0.3), r(b, 3, 0.4)])
    store.close()
    return Store(url, migrate=False), bid, other


def test_a_store_with_duplicates_migrates_keeping_every_distinct_row(store_url: str) -> None:
    old, bid, other = store_at_0008_with_duplicates(store_url)
    assert old.revision() == "0008"
    old.close()
    store = Store(store_url)  # migrates on open
    assert store.revision() == known_revisions()[1]
    for b in (bid, other):
        # exact copies gone; the distinct idx 1 (ttft 0.9) moved past the highest idx
        assert stored(store, b) == [(0, 0.2), (1, 0.2), (2, 0.3), (3, 0.4), (4, 0.9)]
        with store.session() as s:
            summary = s.scalar(select(BenchmarkRow.summary).where(BenchmarkRow.id == b))
        assert summary == {"renumbered_requests": [[1, 4]]}
    assert writer.insert_requests(store, bid, [row(4), row(5)]) == 1
    store.close()
