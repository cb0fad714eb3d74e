"""The ORM (harness/store/schema.py) and the Alembic migrations are two definitions of one
schema: a store migrated to head must be what the ORM describes, checked by Alembic's own
autogenerate comparison. And 0005 gives every run, old ones too, a globally unique id.

Comparison settings: types are compared (SQLite reflects the declared types, JSON
included, so no noise); server defaults are not: the ORM's defaults are Python-side
(`default=`, every insert goes through it or names every column), while the migrations
add server defaults so that NOT NULL columns can be added to tables with rows. Tables,
columns, nullability, indexes, unique constraints and foreign keys are compared strictly.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from harness.store import runs as store_runs
from harness.store.db import Store, _alembic_config, known_revisions, make_engine
from harness.store.schema import Base


def differences(store: Store) -> list[Any]:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                         "compare_server_default": False})
        return list(compare_metadata(context, Base.metadata))


def test_a_store_migrated_to_head_is_what_the_orm_describes(store_url: str) -> None:
    store = Store(store_url)  # from empty, on SQLite and on PostgreSQL
    assert differences(store) == []
    store.close()


def test_migrations_go_up_one_at_a_time_and_back_on_postgresql(pg_url: str) -> None:
    """Every revision applies on PostgreSQL from the one before (not only all at once),
    and every downgrade runs there too."""
    revs, head = known_revisions()
    engine = make_engine(pg_url)
    with engine.begin() as conn:
        for rev in sorted(revs):
            command.upgrade(_alembic_config(conn), rev)
        command.downgrade(_alembic_config(conn), "base")
    engine.dispose()
    store = Store(pg_url)
    assert store.revision() == head and differences(store) == []
    store.close()


def test_the_comparison_sees_a_missing_index_and_column(tmp_path: Path) -> None:
    """Not vacuous: the same comparison on a store missing what 0005 adds names both."""
    path = tmp_path / "gate.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX ix_run_uid")
        db.execute("ALTER TABLE run DROP COLUMN overrides")
    store = Store(f"sqlite:///{path}")
    found = set()
    for diff in differences(store):
        first = diff if isinstance(diff, tuple) else diff[0]  # modify_* come as lists
        found.add((first[0], getattr(first[-1], "name", None)))
    assert ("add_index", "ix_run_uid") in found
    assert ("add_column", "overrides") in found
    store.close()


def store_at_0004(path: Path, runs: int) -> None:
    """A store as the previous release left it, with runs in it (raw SQL: the ORM is at
    head)."""
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0004")
    engine.dispose()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO site (id, name, created_at) VALUES (1, 's', 0)")
        db.execute("INSERT INTO campaign (id, site_id, name, created_at) VALUES (1, 1, 'c', 0)")
        for i in range(1, runs + 1):
            db.execute("INSERT INTO run (id, campaign_id, kind, gate, status, verdict, "
                       "config_json, hosts, args, started_at) VALUES "
                       "(?, 1, 'gate', 'G3', 'FINISHED', 'PASS', '{}', '[]', '[]', ?)",
                       (i, float(i)))


def test_0005_keeps_old_runs_and_gives_each_its_own_uid(tmp_path: Path) -> None:
    path = tmp_path / "gate.db"
    store_at_0004(path, runs=3)
    store = Store(f"sqlite:///{path}")  # migrates on open
    assert store.revision() == known_revisions()[1]
    old = store_runs.runs(store)
    assert [(r.id, r.verdict, r.started_at) for r in old] == [
        (1, "PASS", 1.0), (2, "PASS", 2.0), (3, "PASS", 3.0)]
    assert all(len(r.uid) == 32 and int(r.uid, 16) >= 0 for r in old)
    assert len({r.uid for r in old}) == 3
    assert all(r.overrides == [] for r in old)

    new = store_runs.NewRun(campaign="c", site="s", customer="", kind="gate", gate="G3",
                            overrides=("gates.g3.repetitions=5", "load.seed=7"))
    rid = store_runs.start_gate_run(store, new)
    bench = store_runs.start_run(store, store_runs.NewRun(campaign="c", site="s",
                                                          customer="", kind="bench"))
    made = store_runs.get_run(store, rid)
    assert made.overrides == ["gates.g3.repetitions=5", "load.seed=7"]
    assert store_runs.get_run(store, bench).overrides == []
    uids = {r.uid for r in store_runs.runs(store)}
    assert len(uids) == 5 and "" not in uids
    assert differences(store) == []
    store.close()


def test_0005_goes_back_to_0004_with_the_runs_kept(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G3"))
    store_runs.finish_run(store, rid, verdict="PASS", reason="")
    with store.engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0004")
    assert store.revision() == "0004"
    with store.engine.connect() as conn:
        columns = [r[1] for r in conn.exec_driver_sql("PRAGMA table_info(run)")]
        kept = conn.exec_driver_sql("SELECT id, verdict FROM run").fetchall()
    assert "uid" not in columns and "overrides" not in columns and "plan" in columns
    assert kept == [(rid, "PASS")]
    store.close()


def test_0006_gives_old_checks_empty_details_and_goes_back(tmp_path: Path) -> None:
    """A check stored before 0006 reads {} (the report shows its English as stored); a new
    one keeps its reasons; going back to 0005 drops the column and keeps the rows."""
    path = tmp_path / "gate.db"
    store = Store(f"sqlite:///{path}")
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G1"))
    store.close()
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0005")
    engine.dispose()
    with sqlite3.connect(path) as db:
        db.execute('INSERT INTO "check" (run_id, nodeid, name, outcome, message, expected, '
                   "measured, stage, duration, finished_at) VALUES "
                   "(?, 'a', 'a', 'PASS', '', '', '', 'call', 0, 0)", (rid,))
    store = Store(f"sqlite:///{path}")
    why = {"message": {"code": "g3.counters_reset"}}
    store_runs.record_check(store, rid, nodeid="b", name="b", host=None, outcome="ERROR",
                            details=why)
    assert [c.details for c in store_runs.checks(store, rid)] == [{}, why]
    with store.engine.begin() as conn:
        command.downgrade(_alembic_config(conn), "0005")
    with store.engine.connect() as conn:
        columns = [r[1] for r in conn.exec_driver_sql('PRAGMA table_info("check")')]
        kept = conn.exec_driver_sql('SELECT nodeid FROM "check"').fetchall()
    assert "details" not in columns and kept == [("a",), ("b",)]
    store.close()
