"""G4 soak windows on a real PostgreSQL server (tests/pg_support's throwaway cluster;
skipped, with why, where none can run): a window pulled twice is one row with the second
pull's values and its first uid, through PostgreSQL's INSERT ... ON CONFLICT."""

from __future__ import annotations

from harness.store import Store
from harness.store import runs as store_runs
from harness.store import windows as store_windows


def test_a_window_pulled_twice_is_one_row_on_postgresql(pg_url: str) -> None:
    store = Store(pg_url)
    try:
        rid = store_runs.start_gate_run(store, store_runs.NewRun(
            campaign="c", site="s", customer="x", kind="gate", gate="G4"))
        first = [{"idx": i, "start_s": 60.0 * i, "length_s": 60.0, "requests": 10,
                  "errors": {"timeout": 1}, "counters": {"gpu1#0": {"hits": 5}}}
                 for i in range(3)]
        assert store_windows.upsert_windows(store, rid, first) == 3
        before = {w["idx"]: w["uid"] for w in store_windows.windows(store, rid)}
        again = [{"idx": 1, "start_s": 60.0, "length_s": 60.0, "requests": 12,
                  "errors": {}, "ttft_p99_s": 0.25},
                 {"idx": 1, "start_s": 60.0, "length_s": 60.0, "requests": 13},
                 {"idx": 3, "start_s": 180.0, "length_s": 60.0, "requests": 9}]
        assert store_windows.upsert_windows(store, rid, again) == 3
        after = store_windows.windows(store, rid)
        assert [w["idx"] for w in after] == [0, 1, 2, 3]
        w1 = after[1]
        assert (w1["requests"], w1["errors"], w1["ttft_p99_s"], w1["counters"]) == (
            13, {}, 0.25, {"gpu1#0": {"hits": 5}})
        assert {w["idx"]: w["uid"] for w in after[:3]} == before
        assert store_windows.last_index(store, rid) == 3
    finally:
        store.close()
