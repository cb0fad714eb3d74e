"""`gate sync`'s merge (harness.store.sync): runs merge by uid into a store of other ids,
a second sync changes nothing, a newer revision replaces the older as a whole, the same
revision with other content is refused and the target's copy kept, sign-offs of both
sides are kept, a sync stopped mid-way leaves no half run and completes on the next, a dry
run writes nothing. Sources are SQLite files; targets (`store_url`) SQLite and
PostgreSQL (tests/pg_support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select, text, update

from harness.store import Store, engines, writer
from harness.store import runs as store_runs
from harness.store import sync as store_sync
from harness.store import windows as store_windows
from harness.store.schema import Base, CheckRow
from harness.store.sync import SyncResult, sync_stores
from harness.store.sync_rows import (
    MEASURED,
    MERGED,
    NEVER,
    REQUEST,
    TOP,
    copy_measured,
    run_digest,
)


def make_run(store: Store, tmp_path: Path, *, site: str = "acme", campaign: str = "poc",
             gate: str = "G3", requests: int = 3, finish: bool = True) -> int:
    """A gate run with rows of every kind a run holds, each through the harness's own
    writer; finished (PASS) unless `finish` is False (then it holds its campaign)."""
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=site.upper(), kind="gate", gate=gate))
    for i in range(2):
        store_runs.record_check(store, rid, nodeid=f"t{i}", name=f"t{i}", host="h",
                                outcome="PASS", details={"k": [i, 0.5]})
        writer.upsert_cell(store, rid, {"layout": "TP8", "tier": i, "verdict": "PASS",
                                        "drop": 0.3, "details": {"b": 1, "a": None}})
        bid = writer.start_benchmark(store, rid, tier=i, params={"c": i})
        writer.insert_requests(store, bid, [
            {"idx": k, "scheduled": k * 0.1, "ttft": 0.25, "chunks": b"\x00\x01",
             "status": 200, "finish_reason": "length"} for k in range(requests)])
        writer.finish_benchmark(store, bid, status="FINISHED", duration=1.5,
                                summary={"n": requests})
        writer.insert_series(store, rid, [{"source": "s", "metric": "m", "at": float(k),
                                           "value": 1.0 + k} for k in range(2)], bid)
        store_runs.add_event(store, rid, source="harness", name=f"e{i}", host=None,
                             status="ok")
        art = tmp_path / f"{site}-{campaign}-{rid}-{i}.txt"
        art.write_text(f"{rid} {i}")
        store_runs.add_artifact(store, rid, art, kind="log")
        store_runs.add_host_fact(store, rid, host="h", key=f"k{i}", value={"v": i})
        engines.record_engine(store, rid, host="h", pid=100 + i, start_ticks=7, arm="a",
                              layout="TP8", instance=i, url="http://h")
    store_windows.upsert_windows(store, rid, [
        {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 5,
         "errors": {"timeout": k}} for k in range(2)])
    if finish:
        store_runs.finish_run(store, rid, verdict="PASS", reason="")
        store_runs.add_signoff(store, rid, role="vendor", name="v", note="ok")
    return rid


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: int(conn.scalar(select(text("count(*)")).select_from(t)) or 0)
                for t in Base.metadata.sorted_tables}


def digests(engine: Engine) -> dict[str, tuple[int, str]]:
    """run uid -> (revision, content digest)."""
    with engine.connect() as conn:
        return {str(u): (int(rev), run_digest(conn, int(i))) for i, u, rev in
                conn.execute(text("SELECT id, uid, revision FROM run"))}


def dump(engine: Engine) -> dict[str, list[str]]:
    """Every row of every table, ids included: what "changes nothing" compares."""
    with engine.connect() as conn:
        return {t.name: sorted(repr(tuple(r)) for r in conn.execute(select(t)))
                for t in Base.metadata.sorted_tables}


def signoff_uids(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return {str(u) for u in conn.scalars(text("SELECT uid FROM signoff"))}


def actions(result: SyncResult) -> dict[str, str]:
    return {r.uid: r.action for r in result.runs}


def uid_of(store: Store, rid: int) -> str:
    return store_runs.get_run(store, rid).uid


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'source.db'}")
    yield store
    store.close()


def test_every_table_is_one_kind_of_row() -> None:
    """A table added later must say how it travels (measured, merged, the tree, never)."""
    kinds = [*MEASURED, *MERGED, *TOP, *NEVER, REQUEST]
    assert sorted(kinds) == sorted(t.name for t in Base.metadata.sorted_tables)


def test_into_an_empty_store_and_again_changes_nothing(source: Store, store_url: str,
                                                       tmp_path: Path) -> None:
    a = make_run(source, tmp_path)
    b = make_run(source, tmp_path, site="globex", gate="G4")
    source_counts = counts(source.engine)
    # ids differ between stores: the target already holds a run of its own
    target = Store(store_url)
    mine = make_run(target, tmp_path, site="initech")
    before = counts(target.engine)
    first = sync_stores(source, target)
    assert [(r.uid, r.action, r.rows, r.signoffs) for r in first.runs] == [
        (uid_of(source, a), "added", 24, 1), (uid_of(source, b), "added", 24, 1)]
    assert (first.sites, first.campaigns) == (2, 2)
    assert counts(target.engine) == {k: before[k] + source_counts[k] for k in before}
    got = digests(target.engine)
    assert {u: got[u] for u in digests(source.engine)} == digests(source.engine)
    snapshot = dump(target.engine)
    second = sync_stores(source, target)
    assert [(r.action, r.why) for r in second.runs] == [("skipped", "same content")] * 2
    assert dump(target.engine) == snapshot
    assert uid_of(target, mine) in got
    target.close()


def test_two_sites_poc_from_two_stores_and_one_site_from_two_laptops(
        tmp_path: Path, store_url: str) -> None:
    """Each site's `poc` stays its own; the same site and campaign made in two stores
    (two uids for one name) is one site and one campaign in the target."""
    stores = [Store(f"sqlite:///{tmp_path / f's{n}.db'}") for n in range(3)]
    acme = make_run(stores[0], tmp_path, site="acme")
    globex = make_run(stores[1], tmp_path, site="globex")
    laptop = make_run(stores[2], tmp_path, site="acme", gate="G4")
    target = Store(store_url)
    for s in stores:
        assert set(actions(sync_stores(s, target)).values()) == {"added"}
    refs = [c.ref for c in store_runs.find_campaigns(target, "poc")]
    assert refs == ["acme/poc", "globex/poc"]
    by_site = {site: [r.uid for r in store_runs.runs(target, campaign=f"{site}/poc")]
               for site in ("acme", "globex")}
    assert by_site == {"acme": [uid_of(stores[0], acme), uid_of(stores[2], laptop)],
                       "globex": [uid_of(stores[1], globex)]}
    for s in stores:
        s.close()
    target.close()


def test_a_newer_revision_replaces_the_older_as_a_whole(source: Store, store_url: str,
                                                         tmp_path: Path) -> None:
    rid = make_run(source, tmp_path)
    target = Store(store_url)
    sync_stores(source, target)
    theirs = store_runs.runs(target)[0].id
    store_runs.add_signoff(target, theirs, role="customer", name="c", note="seen")
    # resumed: revision 2, one check measured again, a new window
    store_runs.reopen_run(source, rid)
    store_runs.record_check(source, rid, nodeid="t0", name="t0", host="h", outcome="ERROR",
                            attempt_started=9e12)
    store_windows.upsert_windows(source, rid, [{"idx": 2, "start_s": 120.0,
                                                "length_s": 60.0, "requests": 1}])
    store_runs.finish_run(source, rid, verdict="ERROR", reason="again")
    assert store_runs.get_run(source, rid).revision == 2
    result = sync_stores(source, target)
    assert [(r.action, r.target_revision, r.revision) for r in result.runs] == [
        ("updated", 1, 2)]
    assert digests(target.engine) == digests(source.engine)
    row = store_runs.get_run(target, theirs)
    assert (row.revision, row.verdict, row.reason) == (2, "ERROR", "again")
    assert [c.outcome for c in store_runs.checks(target, theirs)] == ["PASS", "ERROR"]
    assert {s.role for s in store_runs.signoffs(target, theirs)} == {"vendor", "customer"}
    # the older one does not come back the other way
    back = sync_stores(target, source)
    assert [(r.action, r.why) for r in back.runs] == [("skipped", "same content")]
    assert {s.role for s in store_runs.signoffs(source, rid)} == {"vendor", "customer"}
    target.close()


def test_the_same_revision_with_other_content_is_refused(source: Store, store_url: str,
                                                          tmp_path: Path) -> None:
    rid = make_run(source, tmp_path)
    target = Store(store_url)
    sync_stores(source, target)
    before = dump(target.engine)
    with source.engine.begin() as conn:  # changed by hand: the revision says nothing
        conn.execute(update(CheckRow).where(CheckRow.run_id == rid, CheckRow.nodeid == "t1")
                     .values(outcome="STOP-LOSS"))
    store_runs.add_signoff(source, rid, role="reviewer", name="r", note="")
    other = make_run(source, tmp_path, campaign="next")
    result = sync_stores(source, target)
    assert actions(result) == {uid_of(source, rid): "refused", uid_of(source, other): "added"}
    refused = result.refused[0]
    assert refused.line() == (f"acme/poc G3 run {uid_of(source, rid)}: its content differs "
                              f"from the target's at the same revision (1); the target "
                              f"keeps its own")
    assert refused.signoffs == 0 and refused.rows == 0
    after = dump(target.engine)
    assert len(after["run"]) == len(before["run"]) + 1
    # nothing of the refused run changed: not its rows, not its sign-offs
    theirs = next(r for r in store_runs.runs(target) if r.uid == uid_of(source, rid))
    assert [c.outcome for c in store_runs.checks(target, theirs.id)] == ["PASS", "PASS"]
    assert len(store_runs.signoffs(target, theirs.id)) == 1
    assert set(before["check"]) <= set(after["check"])
    target.close()


def test_signoffs_of_both_sides_are_kept_and_change_no_revision(
        source: Store, store_url: str, tmp_path: Path) -> None:
    rid = make_run(source, tmp_path)
    target = Store(store_url)
    sync_stores(source, target)
    theirs = store_runs.runs(target)[0].id
    store_runs.add_signoff(target, theirs, role="customer", name="c", note="")
    store_runs.add_signoff(source, rid, role="reviewer", name="r", note="")
    to, back = sync_stores(source, target), sync_stores(target, source)
    assert [(r.action, r.signoffs) for r in (*to.runs, *back.runs)] == [
        ("skipped", 1), ("skipped", 1)]
    assert signoff_uids(source.engine) == signoff_uids(target.engine)
    assert len(signoff_uids(source.engine)) == 3
    assert store_runs.get_run(source, rid).revision == 1
    assert store_runs.get_run(target, theirs).revision == 1
    target.close()


def test_a_dry_run_writes_nothing_and_says_what_a_sync_would(
        source: Store, store_url: str, tmp_path: Path) -> None:
    make_run(source, tmp_path)
    make_run(source, tmp_path, site="globex")
    absent = tmp_path / "absent.db"
    stand_in = store_sync.peek(f"sqlite:///{absent}")
    dry_new = sync_stores(source, stand_in, dry_run=True)
    stand_in.close()
    assert not absent.exists()
    target = Store(store_url)
    before = dump(target.engine)
    dry = sync_stores(source, target, dry_run=True)
    assert dump(target.engine) == before
    real = sync_stores(source, target)
    for d in (dry, dry_new):
        assert d.dry_run and [(r.action, r.rows, r.signoffs) for r in d.runs] == [
            (r.action, r.rows, r.signoffs) for r in real.runs]
        assert (d.sites, d.campaigns) == (real.sites, real.campaigns) == (2, 2)
    target.close()


class Stop(Exception):
    """Stands for the process dying mid-way."""


def test_a_sync_stopped_mid_run_leaves_no_half_run_and_completes(
        source: Store, store_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = make_run(source, tmp_path), make_run(source, tmp_path, site="globex")
    target = Store(store_url)
    calls: list[int] = []

    def dies_on_the_second(*args: Any) -> int:
        calls.append(1)
        n = copy_measured(*args)  # the rows are written in the run's transaction, then it dies
        if len(calls) == 2:
            raise Stop
        return n

    monkeypatch.setattr(store_sync, "copy_measured", dies_on_the_second)
    with pytest.raises(Stop):
        sync_stores(source, target)
    monkeypatch.undo()
    assert set(digests(target.engine)) == {uid_of(source, first)}
    after_stop = counts(target.engine)
    assert after_stop["request"] == 6 and after_stop["site"] == 1  # globex rolled back
    result = sync_stores(source, target)
    assert actions(result) == {uid_of(source, first): "skipped",
                               uid_of(source, second): "added"}
    assert digests(target.engine) == digests(source.engine)
    target.close()


def test_a_run_resumed_while_it_is_copied_is_left_for_the_next_sync(
        source: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = make_run(source, tmp_path)
    target = Store(f"sqlite:///{tmp_path / 'target.db'}")

    def resumed_meanwhile(*args: Any) -> int:
        if store_runs.get_run(source, rid).status != "RUNNING":
            store_runs.reopen_run(source, rid)
        return copy_measured(*args)

    monkeypatch.setattr(store_sync, "copy_measured", resumed_meanwhile)
    result = sync_stores(source, target)
    assert [(r.action, r.why) for r in result.runs] == [
        ("skipped", "it changed while it was synced: sync again")]
    assert counts(target.engine)["run"] == 0 and counts(target.engine)["request"] == 0
    target.close()


def test_a_run_in_progress_on_either_side_is_left_alone(source: Store,
                                                         tmp_path: Path) -> None:
    rid = make_run(source, tmp_path)
    running = make_run(source, tmp_path, campaign="live", finish=False)
    target = Store(f"sqlite:///{tmp_path / 'target.db'}")
    first = sync_stores(source, target)
    assert [(r.uid, r.action, r.why) for r in first.runs][1] == (
        uid_of(source, running), "skipped", "in progress: not finished here")
    assert counts(target.engine)["run"] == 1
    theirs = store_runs.runs(target)[0].id
    store_runs.reopen_run(target, theirs)  # resumed there: revision 2, running
    for _ in range(2):  # here: revision 3, finished
        store_runs.reopen_run(source, rid)
        store_runs.finish_run(source, rid, verdict="PASS", reason="")
    result = sync_stores(source, target)
    assert (result.runs[0].action, result.runs[0].why) == (
        "skipped", "in progress in the target (revision 2)")
    assert store_runs.get_run(target, theirs).status == "RUNNING"
    target.close()


def test_from_either_backend_the_digest_agrees_nan_and_all(store_url: str,
                                                           tmp_path: Path) -> None:
    """A run read from PostgreSQL (pure-Python rows) or SQLite lands with the same digest;
    a NaN (which SQLite stores as NULL) and -0.0 do not make two copies differ."""
    source = Store(store_url)
    rid = make_run(source, tmp_path)
    bid = writer.benchmarks(source, rid)[0].id
    writer.insert_requests(source, bid, [{"idx": 9, "scheduled": -0.0, "ttft": float("nan"),
                                          "error": "boom\ttab\nline", "chunks": b""}])
    target = Store(f"sqlite:///{tmp_path / 'target.db'}")
    assert [r.action for r in sync_stores(source, target).runs] == ["added"]
    assert digests(target.engine) == digests(source.engine)
    assert [(r.action, r.why) for r in sync_stores(source, target).runs] == [
        ("skipped", "same content")]
    assert [(r.action, r.why) for r in sync_stores(target, source).runs] == [
        ("skipped", "same content")]
    source.close()
    target.close()


def test_a_row_the_target_cannot_take_refuses_that_run_only(store_url: str,
                                                            tmp_path: Path) -> None:
    """SQLite keeps an integer past int4 where PostgreSQL refuses it: that run is refused
    naming why, and leaves nothing behind; the next run still syncs."""
    source = Store(f"sqlite:///{tmp_path / 'source.db'}")
    big = make_run(source, tmp_path)
    bid = writer.benchmarks(source, big)[0].id
    writer.insert_requests(source, bid, [{"idx": 9, "scheduled": 0.0, "status": 2 ** 40}])
    fine = make_run(source, tmp_path, site="globex")
    target = Store(store_url)
    result = sync_stores(source, target)
    if store_url.startswith("sqlite"):
        assert [r.action for r in result.runs] == ["added", "added"]
    else:
        assert [r.action for r in result.runs] == ["refused", "added"]
        assert result.refused[0].why.startswith("the target cannot take a row of it: ")
        assert set(digests(target.engine)) == {uid_of(source, fine)}
        assert counts(target.engine)["site"] == 1
        assert (result.sites, result.campaigns) == (1, 1)
    source.close()
    target.close()
