"""Engine logs into the evidence (harness/serving/enginelogs.py): fetched over a real local
transport after each stop, only what is new each time, at most the tail, sha256 recorded;
a missing log is an event, never an error."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.config.inventory import load_inventory
from harness.config.models import SiteConfig
from harness.serving import enginelogs
from harness.serving.enginelogs import EngineLogs
from harness.store import Store
from harness.store import runs as store_runs
from harness.store.queries import run_tables
from harness.transport import TransportPool


def test_window_keeps_what_is_new_and_at_most_its_tail() -> None:
    assert enginelogs.window(100, 0, limit=1000) == (0, 100)
    assert enginelogs.window(100, 60, limit=1000) == (60, 40)     # only what is new
    assert enginelogs.window(5000, 1000, limit=1000) == (4000, 1000)  # the end of it
    assert enginelogs.window(50, 80, limit=1000) == (0, 50)       # rotated: from its start
    assert enginelogs.window(50, 50, limit=1000) == (50, 0)       # nothing new
    assert enginelogs.fill("/l/{arm}-{layout}-{instance}-{other}.log",
                           {"arm": "baseline", "layout": "TP8", "instance": "0"}) == \
        "/l/baseline-TP8-0-{other}.log"


def test_logs_are_fetched_after_each_stop_with_their_sha256(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n")
    logs = tmp_path / "engines"
    logs.mkdir()
    arm = {"start": {"command": ["true"]}, "stop": {"command": ["true"]},
           "logs": [str(logs / "{arm}-{layout}-{instance}.log"), str(logs / "absent.log")]}
    config = SiteConfig.model_validate({
        "site": {"name": "s"}, "campaign": {"name": "c"}, "inventory": "hosts.ini",
        "model": {"name": "m"}, "arms": {"baseline": arm, "accelerated": arm},
        "layouts": [{"name": "TP4x2", "tp": 4, "instances": [{"host": "g1", "port": 8000},
                                                               {"host": "g1", "port": 8001}]}]})
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    rid = store_runs.start_gate_run(store, store_runs.NewRun(
        campaign="c", site="s", customer="", kind="gate", gate="G3"))
    events: list[dict[str, object]] = []

    def event(*, source: str, name: str, host: str | None, status: str,
              message: str = "", duration: float = 0.0) -> None:
        events.append({"name": name, "status": status, "message": message})

    layout = config.layouts[0]
    one = logs / "baseline-TP4x2-0.log"
    one.write_text("started\n" + "x" * 3000 + "\nstopped\n")
    (logs / "baseline-TP4x2-1.log").write_text("instance 1\n")
    with TransportPool(load_inventory(tmp_path / "hosts.ini"),
                       known_hosts=tmp_path / "kh") as pool:
        fetch = EngineLogs(config, pool, store, rid, event, tmp_path / "artifacts")
        fetch.collect("baseline", layout)
        with one.open("a") as f:
            f.write("second start\n" + "y" * 5000 + "\nfailed: CUDA out of memory\n")
        fetch.tail_bytes = 1000  # the second fetch has 5 kB new: only its end is kept
        fetch.collect("baseline", layout)
    arts = list(run_tables(store, rid).artifacts.itertuples(index=False))
    assert [Path(a.path).name for a in arts] == [
        "001-baseline-TP4x2-0-baseline-TP4x2-0.log", "002-baseline-TP4x2-1-baseline-TP4x2-1.log",
        "003-baseline-TP4x2-0-baseline-TP4x2-0.log"]
    for a in arts:
        assert a.sha256 == hashlib.sha256(Path(a.path).read_bytes()).hexdigest()
    first, _, second = (Path(a.path).read_text() for a in arts)
    assert first.startswith("started") and "second start" not in first
    assert second.endswith("failed: CUDA out of memory\n") and "started" not in second
    assert [a.kind for a in arts] == ["engine-log", "engine-log", "engine-log tail"]
    names = [str(e["name"]) for e in events]
    assert sum("absent.log" in n for n in names) == 4  # 2 instances x 2 stops, each said
    assert any("shortened" in n for n in names)
    store.close()


def test_the_report_names_the_kind_the_fetch_records() -> None:
    """The appendix folds engine logs into one line per host by their artifact kind."""
    from harness.report.appendix import ENGINE_LOG

    assert enginelogs.KIND == ENGINE_LOG and enginelogs.KIND_TAIL.startswith(ENGINE_LOG)
