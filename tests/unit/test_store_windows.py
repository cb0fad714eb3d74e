"""G4 soak windows in the store (harness/store/windows.py): a window pulled twice is one
row with the second pull's values and its first uid; runs do not mix; an unknown key is
refused before anything is written; an evidence pack's copy of a run takes its windows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.store import Store
from harness.store import runs as store_runs
from harness.store import windows as store_windows
from harness.store.copy import copy_runs


def new_run(store: Store, campaign: str = "c") -> int:
    return store_runs.start_gate_run(store, store_runs.NewRun(
        campaign=campaign, site="s", customer="x", kind="gate", gate="G4"))


def window(idx: int, **more: Any) -> dict[str, Any]:
    return {"idx": idx, "start_s": 3600.0 * idx, "length_s": 3600.0, "requests": 100 + idx,
            **more}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    yield s
    s.close()


def test_a_window_pulled_twice_is_one_row_with_the_second_values(store: Store) -> None:
    rid = new_run(store)
    first = [window(0, errors={"timeout": 1}, ttft_p50_s=0.5, counters={"a": 1}),
             window(1, ttft_p50_s=0.6)]
    assert store_windows.upsert_windows(store, rid, first) == 2
    before = {w["idx"]: w for w in store_windows.windows(store, rid)}
    again = [window(0, requests=7, errors={"http": 2}, ttft_p50_s=0.9, engine_restarts=1,
                    pulled_at=123.0),
             window(1, ttft_p50_s=None)]
    assert store_windows.upsert_windows(store, rid, again) == 2
    after = store_windows.windows(store, rid)
    assert [w["idx"] for w in after] == [0, 1]
    w0, w1 = after
    assert (w0["requests"], w0["errors"], w0["ttft_p50_s"], w0["engine_restarts"],
            w0["pulled_at"]) == (7, {"http": 2}, 0.9, 1, 123.0)
    assert w0["counters"] == {"a": 1}  # not given again: kept
    assert w1["ttft_p50_s"] is None  # given as None: stored as None
    assert w1["pulled_at"] >= before[1]["pulled_at"]
    for w in after:
        assert w["uid"] == before[w["idx"]]["uid"] and len(w["uid"]) == 32
        assert w["id"] == before[w["idx"]]["id"] and w["run_id"] == rid
    assert w0["uid"] != w1["uid"]


def test_defaults_and_a_window_twice_in_one_batch(store: Store) -> None:
    rid = new_run(store)
    n = store_windows.upsert_windows(store, rid, [window(3), window(3, output_tokens=5)])
    assert n == 2
    (w,) = store_windows.windows(store, rid)
    assert (w["idx"], w["output_tokens"], w["engine_restarts"], w["errors"],
            w["counters"], w["external_hit_tokens"]) == (3, 5, 0, {}, {}, None)
    assert store_windows.upsert_windows(store, rid, []) == 0


def test_windows_of_two_runs_do_not_mix(store: Store) -> None:
    a, b = new_run(store, "c1"), new_run(store, "c2")
    store_windows.upsert_windows(store, a, [window(0), window(1)])
    store_windows.upsert_windows(store, b, [window(0, requests=999)])
    assert [w["requests"] for w in store_windows.windows(store, a)] == [100, 101]
    assert [w["requests"] for w in store_windows.windows(store, b)] == [999]
    assert store_windows.last_index(store, a) == 1
    assert store_windows.last_index(store, b) == 0


@pytest.mark.parametrize(("key", "named"), [("ttft_p95_s", "'ttft_p95_s'"),
                                            ("run_id", "'run_id'"), ("id", "'id'")])
def test_an_unknown_key_is_refused_naming_it_and_nothing_is_written(
        store: Store, key: str, named: str) -> None:
    rid = new_run(store)
    with pytest.raises(ValueError, match=named):
        store_windows.upsert_windows(store, rid, [window(0), window(1, **{key: 1})])
    with pytest.raises(ValueError, match="'start_s' is required"):
        store_windows.upsert_windows(store, rid, [{"idx": 0, "length_s": 1, "requests": 0}])
    assert store_windows.windows(store, rid) == []


def test_windows_come_back_by_index_and_last_index(store: Store) -> None:
    rid = new_run(store)
    assert store_windows.last_index(store, rid) is None
    assert store_windows.windows(store, rid) == []
    store_windows.upsert_windows(store, rid, [window(2), window(0)])
    store_windows.upsert_windows(store, rid, [window(5), window(1)])
    assert [w["idx"] for w in store_windows.windows(store, rid)] == [0, 1, 2, 5]
    assert store_windows.last_index(store, rid) == 5


def test_a_copied_run_takes_its_windows_and_only_its_own(store: Store,
                                                          tmp_path: Path) -> None:
    """The evidence pack's copy (harness/store/copy.py walks every table with a run_id)."""
    kept, other = new_run(store, "c1"), new_run(store, "c2")
    store_windows.upsert_windows(store, kept, [window(0, counters={"gpu1#0": {"x": 1}}),
                                               window(1)])
    store_windows.upsert_windows(store, other, [window(0)])
    pack = Store(f"sqlite:///{tmp_path / 'pack.sqlite'}")
    try:
        copied = copy_runs(store, pack, [kept])
        assert copied.rows["soak_window"] == 2 and "soak_window" not in copied.skipped
        assert store_windows.windows(pack, kept) == store_windows.windows(store, kept)
        assert store_windows.windows(pack, other) == []
    finally:
        pack.close()


def test_0007_goes_back_to_0006_and_up_again(tmp_path: Path) -> None:
    from alembic import command
    from sqlalchemy import inspect

    from harness.store.db import _alembic_config, known_revisions

    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    rid = new_run(store)
    store_windows.upsert_windows(store, rid, [window(0)])
    with store.engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0006")
    assert store.revision() == "0006"
    assert "soak_window" not in inspect(store.engine).get_table_names()
    with store.engine.connect() as conn:  # raw SQL: the ORM is at head (0008: run.revision)
        assert [r[0] for r in conn.exec_driver_sql("SELECT id FROM run")] == [rid]
    store.close()
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")  # migrates on open
    assert store.revision() == known_revisions()[1] and store_windows.windows(store, rid) == []
    store.close()
