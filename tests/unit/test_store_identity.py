"""Identity and revisions: every row that travels gets a globally unique uid at creation
(and old rows get theirs from migration 0008); a campaign's name is unique within its site
only, so two sites may each have `poc`, a bare name two sites share is refused naming
them, and SITE/CAMPAIGN names one; a run's revision goes up on abort and resume, never on
a sign-off; the evidence pack's copy keeps every row's uid. Tests taking `store_url` run
on SQLite and on PostgreSQL (tests/pg_support)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, Table, insert, inspect, select, text
from sqlalchemy.exc import IntegrityError

from harness.errors import EXIT_USAGE, NotFoundError, UsageError
from harness.store import Store, engines, queries, writer
from harness.store import runs as store_runs
from harness.store import windows as store_windows
from harness.store.copy import copy_runs
from harness.store.db import _alembic_config, known_revisions, make_engine
from harness.store.lookups import campaign_facts
from harness.store.schema import Base, CampaignRow

HEX32 = re.compile(r"^[0-9a-f]{32}$")
# Every table but these has a uid: a request is (its benchmark's uid, idx); a run_lock
# belongs to a live process and never travels.
NO_UID = {"request", "run_lock"}
AMBIGUOUS = "campaign 'poc' is in 2 sites: acme/poc, globex/poc; name one as SITE/CAMPAIGN"


def new_run(store: Store, campaign: str = "poc", site: str = "acme", gate: str = "G1",
            kind: str = "gate") -> int:
    return store_runs.start_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=site.upper(), kind=kind, gate=gate))


def fill_run(store: Store, rid: int, tmp_path: Path) -> None:
    """Two rows of every kind a run holds, each through the writer the harness uses."""
    for i in range(2):
        store_runs.record_check(store, rid, nodeid=f"t{i}", name=f"t{i}", host="h",
                                outcome="PASS")
        writer.upsert_cell(store, rid, {"layout": "l", "tier": i, "verdict": "PASS"})
        bid = writer.start_benchmark(store, rid, tier=i)
        writer.insert_requests(store, bid, [{"idx": 0, "scheduled": 0.0},
                                            {"idx": 1, "scheduled": 0.1}])
        writer.insert_series(store, rid, [{"source": "s", "metric": "m", "at": float(k),
                                           "value": 1.0} for k in range(3)], bid)
        store_runs.add_event(store, rid, source="harness", name=f"e{i}", host=None,
                             status="ok")
        art = tmp_path / f"a{rid}-{i}.txt"
        art.write_text(f"{rid} {i}")
        store_runs.add_artifact(store, rid, art, kind="log")
        store_runs.add_host_fact(store, rid, host="h", key=f"k{i}", value=i)
        engines.record_engine(store, rid, host="h", pid=100 + i, start_ticks=1, arm="a",
                              layout="l", instance=i, url="http://h")
        store_runs.add_signoff(store, rid, role="vendor", name="v", note=f"n{i}")
    store_windows.upsert_windows(store, rid, [
        {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 5} for k in range(2)])


def uid_tables() -> list[Table]:
    return [t for t in Base.metadata.sorted_tables if "uid" in t.c]


def uids(engine: Engine) -> dict[str, list[str]]:
    """table -> every row's uid."""
    with engine.connect() as conn:
        return {t.name: [str(u) for u in conn.scalars(select(t.c.uid).order_by(t.c.id))]
                for t in uid_tables()}


def test_every_table_that_travels_has_a_uid_and_only_those() -> None:
    tables = {t.name for t in Base.metadata.sorted_tables}
    assert {t.name for t in uid_tables()} == tables - NO_UID
    for table in uid_tables():
        col = table.c.uid
        assert col.unique and col.index and not col.nullable, table.name


def test_every_row_gets_its_own_uid_at_creation(store_url: str, tmp_path: Path) -> None:
    store = Store(store_url)
    runs = [new_run(store), new_run(store, site="globex"), new_run(store, "other")]
    for rid in runs:
        fill_run(store, rid, tmp_path)
    found = uids(store.engine)
    every = [u for rows in found.values() for u in rows]
    assert all(HEX32.match(u) for u in every), every
    assert len(set(every)) == len(every)  # distinct across tables too
    counts = {name: len(rows) for name, rows in found.items()}
    assert counts == {"site": 2, "campaign": 3, "run": 3, "check": 6, "cell": 6,
                      "benchmark": 6, "series": 18, "event": 6, "artifact": 6,
                      "host_fact": 6, "engine_process": 6, "signoff": 6,
                      "soak_window": 6}
    store.close()


def test_two_sites_may_each_have_a_campaign_of_the_same_name(store_url: str) -> None:
    store = Store(store_url)
    a, g = new_run(store, site="acme"), new_run(store, site="globex")
    cid_a = store_runs.ensure_campaign(store, "poc", "acme")
    cid_g = store_runs.ensure_campaign(store, "poc", "globex")
    assert cid_a != cid_g
    assert store_runs.get_run(store, a).campaign_id == cid_a
    assert store_runs.get_run(store, g).campaign_id == cid_g
    again = new_run(store, site="acme")  # found again, not made twice
    assert store_runs.get_run(store, again).campaign_id == cid_a
    with store.engine.connect() as conn:
        made = list(conn.execute(select(CampaignRow.id, CampaignRow.site_id)))
    assert len(made) == 2
    # the store itself refuses a second `poc` within one site
    site_of = dict(made)
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(insert(CampaignRow).values(site_id=site_of[cid_a], name="poc",
                                                created_at=0.0))
    store.close()


def test_a_bare_name_in_two_sites_is_refused_naming_both(store_url: str) -> None:
    store = Store(store_url)
    new_run(store, site="globex")
    new_run(store, site="acme")
    for read in (lambda: store_runs.runs(store, campaign="poc"),
                 lambda: store_runs.campaign_id(store, "poc"),
                 lambda: queries.campaign_info(store, "poc"),
                 lambda: queries.gate_runs(store, "poc"),
                 lambda: queries.campaign_run_ids(store, "poc"),
                 lambda: queries.gate_attempts(store, "poc", "G1"),
                 lambda: campaign_facts(store, "poc", "G2", ["k"])):
        with pytest.raises(UsageError) as err:
            read()
        assert str(err.value) == AMBIGUOUS and err.value.exit_code == EXIT_USAGE
        assert "\n" not in str(err.value)
    assert store_runs.campaign_names(store) == ["globex/poc", "acme/poc"]
    store.close()


def test_site_slash_campaign_names_one(store_url: str) -> None:
    store = Store(store_url)
    g, a = new_run(store, site="globex"), new_run(store, site="acme")
    a2 = new_run(store, site="acme", gate="G2")
    store_runs.add_host_fact(store, a2, host="h", key="k", value=1)
    assert [r.id for r in store_runs.runs(store, campaign="acme/poc")] == [a, a2]
    assert [r.id for r in store_runs.runs(store, campaign="globex/poc")] == [g]
    assert [r.id for r in store_runs.runs(store, campaign="acme/poc", gate="G2")] == [a2]
    assert store_runs.runs(store, campaign="initech/poc") == []
    ref = store_runs.find_campaign(store, "globex/poc")
    assert ref is not None and (ref.site, ref.name, ref.ref) == ("globex", "poc", "globex/poc")
    assert HEX32.match(ref.uid)
    info = queries.campaign_info(store, "globex/poc")
    assert (info.name, info.site, info.customer, info.ref) == ("poc", "globex", "GLOBEX",
                                                               "globex/poc")
    assert queries.campaign_run_ids(store, "acme/poc") == [a, a2]
    assert list(queries.gate_runs(store, "globex/poc")["id"]) == [g]
    assert [x.id for x in queries.gate_attempts(store, "acme/poc", "G1")] == [a]
    assert campaign_facts(store, "acme/poc", "G2", ["k"])["k"]["h"].run == a2
    assert queries.run_info(store, a).campaign_ref == "acme/poc"
    with pytest.raises(NotFoundError, match="no campaign 'initech/poc'"):
        queries.campaign_info(store, "initech/poc")
    store.close()


def test_one_site_reads_as_before(tmp_path: Path) -> None:
    """A store with one site: bare names, no change."""
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    a, b = new_run(store), new_run(store, "other")
    assert [r.id for r in store_runs.runs(store, campaign="poc")] == [a]
    assert [r.id for r in store_runs.runs(store, campaign="acme/poc")] == [a]
    assert store_runs.runs(store, campaign="nope") == []
    assert store_runs.campaign_names(store) == ["poc", "other"]
    assert store_runs.campaign_id(store, "other") == store_runs.get_run(store, b).campaign_id
    assert queries.campaign_info(store, "poc").site == "acme"
    # a site's name holding "/" (the config allows it; a campaign's never holds one)
    c = new_run(store, "q1", site="ACME/Shanghai")
    assert [r.id for r in store_runs.runs(store, campaign="ACME/Shanghai/q1")] == [c]
    assert [r.id for r in store_runs.runs(store, campaign="q1")] == [c]
    store.close()


def test_abort_and_resume_bump_the_revision_and_a_signoff_does_not(store_url: str) -> None:
    store = Store(store_url)
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="poc", site="acme", customer="", kind="gate", gate="G3"))
    other = new_run(store, "other")

    def revision(run_id: int = rid) -> int:
        return store_runs.get_run(store, run_id).revision

    assert revision() == 1
    store_runs.record_check(store, rid, nodeid="a", name="a", host=None, outcome="PASS")
    assert revision() == 1
    with pytest.raises(UsageError):  # its process (this one) is alive: refused, unchanged
        store_runs.abort_run(store, rid)
    assert revision() == 1
    store_runs.abort_run(store, rid, force=True)
    assert revision() == 2 and store_runs.get_run(store, rid).status == "ABORTED"
    store_runs.reopen_run(store, rid)
    assert revision() == 3 and store_runs.get_run(store, rid).status == "RUNNING"
    store_runs.finish_run(store, rid, verdict="PASS", reason="")
    assert revision() == 3
    uid = store_runs.get_run(store, rid).uid
    store_runs.add_signoff(store, rid, role="reviewer", name="r", note="ok")
    store_runs.add_signoff(store, rid, role="vendor", name="v", note="ok")
    assert revision() == 3 and store_runs.get_run(store, rid).uid == uid
    signed = store_runs.signoffs(store, rid)
    assert len({s.uid for s in signed}) == 2 and all(HEX32.match(s.uid) for s in signed)
    assert revision(other) == 1  # another run's revision is its own
    store.close()


def test_a_copied_row_keeps_its_uid_and_two_copies_agree(store_url: str,
                                                         tmp_path: Path) -> None:
    """The evidence pack's copy (harness/store/copy.py): a copied row keeps its identity,
    so the same run copied twice has the same uids, and ids as the source had them."""
    store = Store(store_url)
    kept, left = new_run(store), new_run(store, site="globex")
    fill_run(store, kept, tmp_path)
    fill_run(store, left, tmp_path)
    source = uids(store.engine)
    with store.engine.connect() as conn:
        mine = {t.name: [str(u) for u in conn.scalars(select(t.c.uid).where(
            t.c.run_id == kept if "run_id" in t.c else t.c.id.is_not(None)))]
            for t in uid_tables()}
    packs = []
    for n in (1, 2):
        pack = Store(f"sqlite:///{tmp_path / f'pack{n}.sqlite'}")
        copy_runs(store, pack, [kept])
        packs.append(uids(pack.engine))
        with pack.engine.connect() as conn:
            assert conn.scalar(text("SELECT revision FROM run")) == 1
        pack.close()
    assert packs[0] == packs[1]
    copied = packs[0]
    assert copied["site"] == source["site"][:1] and copied["campaign"] == source["campaign"][:1]
    assert copied["run"] == [source["run"][0]]
    for name in ("check", "cell", "benchmark", "series", "event", "artifact", "host_fact",
                 "engine_process", "signoff", "soak_window"):
        assert sorted(copied[name]) == sorted(mine[name]) and copied[name], name
        assert not set(copied[name]) & (set(source[name]) - set(mine[name])), name
    store.close()


# -- migration 0008 ----------------------------------------------------------------------

def test_alembic_has_one_head_and_it_is_the_newest() -> None:
    """Two heads (two branches each adding their next number) would leave a store at one
    of them: this issue owns 0008 onwards, one line of revisions."""
    script = ScriptDirectory.from_config(_alembic_config(None))
    heads = script.get_heads()
    assert len(heads) == 1, heads
    revs, head = known_revisions()
    assert head == heads[0] == max(revs) == "0009"


ROWS = 3  # of each kind per store at 0007


def store_at_0007(url: str, series: int = ROWS) -> Engine:
    """A store as the previous release left it, rows in every table (raw SQL: the ORM is
    at head); a run holds the lock of one campaign (run_lock references campaign, which
    SQLite makes again)."""
    engine = make_engine(url)
    with engine.begin() as conn:
        command.upgrade(_alembic_config(conn), "0007")
    sql = [
        "INSERT INTO site (id, name, created_at) VALUES (1, 'acme', 0), (2, 'globex', 0)",
        "INSERT INTO campaign (id, site_id, name, created_at) VALUES "
        "(1, 1, 'poc', 0), (2, 1, 'pilot', 0), (3, 2, 'eval', 0)",
    ]
    for i in range(1, ROWS + 1):
        sql += [
            f"INSERT INTO run (id, uid, campaign_id, kind, gate, status, config_json, hosts, "
            f"args, started_at) VALUES ({i}, 'run{i}', {i}, 'gate', 'G3', 'FINISHED', "
            f"'{{}}', '[]', '[]', {i})",
            f"INSERT INTO \"check\" (id, run_id, nodeid, outcome, finished_at) VALUES "
            f"({i}, {i}, 'n', 'PASS', 0)",
            f"INSERT INTO host_fact (id, run_id, host, key, value) VALUES "
            f"({i}, {i}, 'h', 'k', '1')",
            f"INSERT INTO event (id, run_id, source, name, status, at) VALUES "
            f"({i}, {i}, 'harness', 'e', 'ok', 0)",
            f"INSERT INTO signoff (id, run_id, role, name, at) VALUES "
            f"({i}, {i}, 'vendor', 'v', 0)",
            f"INSERT INTO artifact (id, run_id, path, sha256, size, at) VALUES "
            f"({i}, {i}, 'p', 'x', 1, 0)",
            f"INSERT INTO benchmark (id, run_id, params, summary, started_at) VALUES "
            f"({i}, {i}, '{{}}', '{{}}', 0)",
            f"INSERT INTO request (id, benchmark_id, idx, scheduled) VALUES ({i}, {i}, 0, 0)",
            f"INSERT INTO cell (id, run_id, layout, tier, verdict, details, at) VALUES "
            f"({i}, {i}, 'l', 1, 'PASS', '{{}}', 0)",
            f"INSERT INTO engine_process (id, run_id, host, pid, start_ticks, started_at) "
            f"VALUES ({i}, {i}, 'h', 1, 1, 0)",
            f"INSERT INTO soak_window (id, uid, run_id, idx, start_s, length_s, requests, "
            f"errors, counters, pulled_at) VALUES ({i}, 'win{i}', {i}, 0, 0, 60, 1, '{{}}', "
            f"'{{}}', 0)",
        ]
    sql.append("INSERT INTO run_lock (campaign_id, run_id, pid, hostname, acquired_at, "
               "heartbeat_at) VALUES (1, 1, 1, 'h', 0, 0)")
    with engine.begin() as conn:
        for statement in sql:
            conn.exec_driver_sql(statement)
        rows = [{"id": k + 1, "run": 1 + k % ROWS, "at": float(k)} for k in range(series)]
        conn.execute(text("INSERT INTO series (id, run_id, benchmark_id, source, metric, "
                          "labels, at, value) VALUES (:id, :run, :run, 's', 'm', '{}', "
                          ":at, 1)"), rows)
        if conn.dialect.name == "postgresql":  # ids given: move each sequence past them
            for table in inspect(conn).get_table_names():
                if table not in ("alembic_version", "run_lock"):
                    conn.exec_driver_sql(
                        f"SELECT setval(pg_get_serial_sequence('\"{table}\"', 'id'), "
                        f"(SELECT MAX(id) FROM \"{table}\"))")
    return engine


def test_0008_gives_every_old_row_its_own_uid(store_url: str) -> None:
    series = 25_000 if store_url.startswith("sqlite") else 1_500  # > one batch on SQLite
    engine = store_at_0007(store_url, series=series)
    engine.dispose()
    store = Store(store_url)  # migrates on open
    assert store.revision() == known_revisions()[1]  # migrated to head
    found = uids(store.engine)
    every = [u for name, rows in found.items() for u in rows
             if name not in ("run", "soak_window")]  # these kept the uid they had
    assert all(HEX32.match(u) for u in every)
    assert len(set(every)) == len(every)
    assert {name: len(rows) for name, rows in found.items()} == {
        "site": 2, "campaign": 3, "run": ROWS, "check": ROWS, "cell": ROWS,
        "benchmark": ROWS, "series": series, "event": ROWS, "artifact": ROWS,
        "host_fact": ROWS, "engine_process": ROWS, "signoff": ROWS, "soak_window": ROWS}
    assert found["run"] == [f"run{i}" for i in range(1, ROWS + 1)]
    assert found["soak_window"] == [f"win{i}" for i in range(1, ROWS + 1)]
    with store.engine.connect() as conn:
        assert list(conn.execute(text("SELECT c.id, s.name, c.name FROM campaign c JOIN "
                                      "site s ON s.id = c.site_id ORDER BY c.id"))) == [
            (1, "acme", "poc"), (2, "acme", "pilot"), (3, "globex", "eval")]
        assert list(conn.scalars(text("SELECT revision FROM run"))) == [1] * ROWS
        assert conn.scalar(text("SELECT campaign_id FROM run_lock")) == 1
        if store.engine.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
    assert differences(store) == []
    # names are unique within a site now: globex may have a `poc` too, acme not another
    assert store_runs.ensure_campaign(store, "poc", "globex") not in (1, 2, 3)
    assert store_runs.ensure_campaign(store, "poc", "acme") == 1
    assert [r.id for r in store_runs.runs(store, campaign="acme/poc")] == [1]
    store.close()


def test_0008_goes_back_to_0007_unless_two_sites_share_a_name(store_url: str) -> None:
    engine = store_at_0007(store_url)
    engine.dispose()
    store = Store(store_url)
    shared = store_runs.ensure_campaign(store, "poc", "globex")
    with store.engine.begin() as conn, pytest.raises(RuntimeError, match="'poc'"):
        command.downgrade(_alembic_config(conn), "0007")
    assert store.revision() == "0008"  # 0009 went back; 0008 refused, nothing changed
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM campaign WHERE id = :i"), {"i": shared})
        command.downgrade(_alembic_config(conn), "0007")
    assert store.revision() == "0007"
    found = inspect(store.engine)
    for table in ("site", "campaign", "check", "series", "benchmark"):
        assert "uid" not in {c["name"] for c in found.get_columns(table)}, table
    assert "revision" not in {c["name"] for c in found.get_columns("run")}
    assert [u["column_names"] for u in found.get_unique_constraints("campaign")] == [["name"]]
    with store.engine.connect() as conn:
        assert conn.scalar(text("SELECT COUNT(*) FROM \"check\"")) == ROWS
        assert conn.scalar(text("SELECT COUNT(*) FROM run_lock")) == 1
    store.close()
    store = Store(store_url)  # and up again
    assert store.revision() == known_revisions()[1] and differences(store) == []
    store.close()


def differences(store: Store) -> list[Any]:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                         "compare_server_default": False})
        return list(compare_metadata(context, Base.metadata))
