"""The store: migrations on open, newer-schema refusal, lock, append-only runs; each test
that takes `store_url` runs on SQLite and on PostgreSQL (tests/pg_support)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from harness.errors import LockError, SchemaTooNewError, UsageError
from harness.store import Store, writer
from harness.store import runs as store_runs


def new_run(store: Store, gate: str = "G1") -> int:
    return store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="x", kind="gate", gate=gate))


def test_open_creates_every_table_with_wal(store_url: str) -> None:
    store = Store(store_url)
    tables = set(inspect(store.engine).get_table_names())
    assert {"site", "campaign", "run", "check", "run_lock", "signoff", "artifact", "event",
            "host_fact", "benchmark", "request", "series", "cell"} <= tables
    if store.engine.dialect.name != "sqlite":
        return
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_newer_schema_is_refused_and_left_untouched(store_url: str) -> None:
    url = store_url
    Store(url)
    with Store(url).engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num='9999'"))
    with pytest.raises(SchemaTooNewError) as err:
        Store(url)
    assert err.value.exit_code == 4
    with Store(url, migrate=False).engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "9999"


def test_bad_url_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        Store("nosuchdb://x")
    with pytest.raises(UsageError, match="does not exist"):
        Store(f"sqlite:///{tmp_path / 'missing-dir' / 'g.db'}")


def test_a_server_url_with_a_password_is_refused_without_showing_it() -> None:
    """The password comes from PGPASSWORD or ~/.pgpass only: a URL is echoed on stdout,
    in logs and in `ps`, so one carrying a password is refused before anything opens."""
    with pytest.raises(UsageError, match=r"PGPASSWORD or ~/\.pgpass") as err:
        Store("postgresql+psycopg://gate:s3cret@db.example/gate")
    assert "s3cret" not in str(err.value) and "gate:***@db.example" in str(err.value)
    with pytest.raises(UsageError) as bad:
        Store("postgresql+psycopg://gate:s3cret@db.example:notaport/gate")
    assert "s3cret" not in str(bad.value)


def test_second_run_on_campaign_is_refused_naming_the_first(store_url: str) -> None:
    store = Store(store_url)
    first = new_run(store)
    with pytest.raises(LockError, match=f"run {first} "):
        new_run(store, "G2")
    assert len(store_runs.runs(store)) == 1  # the refused run left no row behind
    store_runs.finish_run(store, first, verdict="PASS", reason="")
    second = new_run(store, "G2")
    assert second != first


def test_abort_clears_a_lock_whose_process_is_gone(store_url: str) -> None:
    store = Store(store_url)
    run_id = new_run(store)
    store_runs.record_check(store, run_id, nodeid="t::a", name="a", host=None, outcome="PASS")
    with pytest.raises(UsageError, match="still running"):
        store_runs.abort_run(store, run_id)  # our own pid is alive
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE run SET pid=999999999"))
    store_runs.abort_run(store, run_id)
    row = store_runs.get_run(store, run_id)
    assert (row.status, row.verdict) == ("ABORTED", "ERROR")
    assert len(store_runs.checks(store, run_id)) == 1  # results kept
    new_run(store, "G2")  # the lock is free again


def test_request_rows_bulk_insert_and_read_back(store_url: str) -> None:
    store = Store(store_url)
    run_id = new_run(store)
    bench = writer.start_benchmark(store, run_id, arm="baseline", tier=4)
    n = writer.insert_requests(store, bench, ({"idx": i, "scheduled": 0.0, "ttft": i / 10}
                                              for i in range(12001)), batch=5000)
    assert n == 12001
    rows = writer.requests(store, bench)
    assert len(rows) == 12001 and rows[5]["ttft"] == pytest.approx(0.5)
    # every column, NULLs, bytes and text that COPY must escape, come back as they went in
    full = {"idx": 0, "instance": 1, "warmup": True, "scheduled": 1.5, "sent": None,
            "ttft": 0.25, "ttft_text": None, "e2el": 2.0, "prompt_tokens": 7,
            "output_tokens": None, "usage_reported": False, "status": 500,
            "error_kind": "http", "error": "tab\there\nline \\ back 'q' \"dq\" \u00e9",
            "chunks": b"\x00\x01\\\n\xff", "finish_reason": "length"}
    other = writer.start_benchmark(store, run_id, arm="accelerated", tier=4)
    assert writer.insert_requests(store, other, [full, {"idx": 1, "scheduled": 0}]) == 2
    back = writer.requests(store, other)
    assert {k: back[0][k] for k in full} == full
    assert (back[1]["instance"], back[1]["warmup"], back[1]["usage_reported"],
            back[1]["scheduled"], back[1]["chunks"]) == (0, False, True, 0.0, None)
    # what an engine says is cut to its column on both (PostgreSQL would refuse the batch)
    writer.insert_requests(store, other, [{"idx": 2, "scheduled": 0,
                                           "finish_reason": "x" * 100}])
    assert writer.requests(store, other)[2]["finish_reason"] == "x" * 32


def test_cells_upsert_within_a_run(store_url: str) -> None:
    store = Store(store_url)
    run_id = new_run(store, "G3")
    base = {"layout": "TP8", "tier": 4, "verdict": "INCONCLUSIVE", "details": {}}
    writer.upsert_cell(store, run_id, base)
    writer.upsert_cell(store, run_id, {**base, "verdict": "PASS"})
    cells = writer.cells(store, run_id)
    assert [c.verdict for c in cells] == ["PASS"]


def test_signoff_counts_only_for_the_result_it_saw(store_url: str) -> None:
    store = Store(store_url)
    run_id = new_run(store, "G3")
    store_runs.finish_run(store, run_id, verdict="INCONCLUSIVE", reason="above band",
                          needs_signoff=True)
    store_runs.add_signoff(store, run_id, role="reviewer", name="R", note="checked")
    assert store_runs.effective_verdict(store, store_runs.get_run(store, run_id)) == "PASS"
    store_runs.reopen_run(store, run_id)  # gate resume: a new result needs a new sign-off
    store_runs.finish_run(store, run_id, verdict="INCONCLUSIVE", reason="above band",
                          needs_signoff=True)
    row = store_runs.get_run(store, run_id)
    assert store_runs.effective_verdict(store, row) == "INCONCLUSIVE"


def test_an_aborted_run_stays_aborted_when_its_old_process_reports(store_url: str) -> None:
    store = Store(store_url)
    run_id = new_run(store)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE run SET pid=999999999"))
    store_runs.abort_run(store, run_id)
    store_runs.finish_run(store, run_id, verdict="PASS", reason="")
    row = store_runs.get_run(store, run_id)
    assert (row.status, row.verdict) == ("ABORTED", "ERROR")
