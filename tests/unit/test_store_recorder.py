"""The recorder a gate suite gets as `gate.recorder`: what it records lands on its own run
(a SQLite file and a PostgreSQL database), so a suite needs no harness.store import."""

from __future__ import annotations

from harness.store import runs as store_runs
from harness.store import writer
from harness.store.db import Store
from harness.store.queries import run_tables
from harness.store.recorder import RunRecorder


def test_events_facts_and_resume_bookkeeping_land_on_the_run(store_url: str) -> None:
    store = Store(store_url)
    new = store_runs.NewRun(campaign="c", site="s", customer="", kind="gate", gate="G3")
    other = store_runs.start_run(store, new)
    run = store_runs.start_run(store, new)
    rec = RunRecorder(store, run)
    assert rec.campaign_id == store_runs.campaign_id(store, "c")

    rec.event(source="harness", name="drop page cache", host="st1", status="failed",
              message="denied")
    rec.host_fact(host="gpu1", key="driver", value={"version": "550"})
    # one pair finished both arms, the next only one: that one is measured again
    for arm, rep in (("baseline", 0), ("accelerated", 0), ("baseline", 1)):
        bid = writer.start_benchmark(store, run, arm=arm, layout="TP8", repetition=rep)
        writer.finish_benchmark(store, bid, status="FINISHED", duration=1.0, summary={})
    assert rec.supersede_unpaired() == 1

    mine, theirs = run_tables(store, run), run_tables(store, other)
    assert mine.events[["name", "host", "status", "message"]].values.tolist() == [
        ["drop page cache", "st1", "failed", "denied"]]
    assert mine.facts[["host", "key"]].values.tolist() == [["gpu1", "driver"]]
    assert mine.facts["value"].tolist() == [{"version": "550"}]
    assert [b.status for b in writer.benchmarks(store, run)] == [
        "FINISHED", "FINISHED", "SUPERSEDED"]
    assert theirs.events.empty and theirs.facts.empty
    store.close()


def test_a_check_without_a_host_reads_back_as_none_not_nan(store_url: str) -> None:
    """pandas 3 reads text columns with NaN for NULL, and NaN is truthy: the report
    printed "nan" as the host of G1's clocks check."""
    store = Store(store_url)
    run = store_runs.start_run(store, store_runs.NewRun(campaign="c", site="s", customer="",
                                                        kind="gate", gate="G1"))
    for nodeid, host in (("a", "gpu1"), ("b", None)):
        store_runs.record_check(store, run, nodeid=nodeid, name="test_x", host=host,
                                outcome="PASS")
    checks = run_tables(store, run).checks
    assert checks["host"].tolist() == ["gpu1", None]
    assert [c.host or "—" for c in checks.itertuples(index=False)] == ["gpu1", "—"]
    store.close()
