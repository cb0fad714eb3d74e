"""`gate sync` as a user runs it: into PostgreSQL and again (nothing changes), from an
evidence pack, a refused run as one line and exit 4, a dry run that makes no file, a sync
killed mid-run (SIGKILL: no half run is left) completed by the next, and every bad or
unreachable --to / --from as one line, exit 4, no traceback and no password. Stores are
built with the store API (tests/unit/test_store_sync.py's make_run), never by a demo."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gate_testing import GateRunner
from sqlalchemy import text

from harness.store import Store
from harness.store import runs as store_runs
from harness.store.sync import shown_url
from tests.unit.test_store_sync import counts, digests, dump, make_run

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
N = r"-?[0-9][0-9,]*(?:\.[0-9]+)?"


def error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 4, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("gate: error:")]
    assert len(lines) == 1, out.stderr
    return lines[0]


def synced(gate_cli: GateRunner, *args: str) -> dict[str, object]:
    out = gate_cli("sync", *args, "--json")
    assert out.returncode == 0, (out.stdout, out.stderr)
    doc: dict[str, object] = json.loads(out.stdout)
    return doc


@pytest.fixture
def site_store(site_dir: Path) -> dict[str, int]:
    """The site's store: the config's campaign with a G3 and a G4 run, finished, and a
    running G1 run of another campaign."""
    store = Store(f"sqlite:///{site_dir / 'gate.db'}")
    made = {"g3": make_run(store, site_dir, site="test-site", campaign="test-campaign"),
            "g4": make_run(store, site_dir, site="test-site", campaign="test-campaign",
                           gate="G4"),
            "live": make_run(store, site_dir, site="test-site", campaign="other",
                             gate="G1", finish=False)}
    store.close()
    return made


def test_into_postgresql_twice_then_from_a_pack(gate_cli: GateRunner, site_dir: Path,
                                                site_store: dict[str, int], pg_url: str,
                                                tmp_path: Path) -> None:
    doc = synced(gate_cli, "--to", pg_url)
    assert doc["counts"] == {"added": 2, "updated": 0, "skipped": 1, "refused": 0}
    # a server by its URL as every gate message names one (no password), a file by path
    assert doc["target"] == shown_url(pg_url) and doc["source"] == str(site_dir / "gate.db")
    site = Store(f"sqlite:///{site_dir / 'gate.db'}")
    fleet = Store(pg_url)
    want = {u: d for u, d in digests(site.engine).items()
            if u != store_runs.get_run(site, site_store["live"]).uid}
    assert digests(fleet.engine) == want
    before = dump(fleet.engine)
    out = gate_cli("sync", "--to", pg_url)
    assert out.returncode == 0, out.stderr
    assert "same content" in out.stdout and "in progress" in out.stdout
    assert "runs: added 0, updated 0, skipped 3, refused 0" in out.stdout
    assert dump(fleet.engine) == before
    # an evidence pack is a source: its run lands in a new store as it is in the site's
    out = gate_cli("export", str(site_store["g4"]), "-o", str(tmp_path / "g4.tar.gz"))
    assert out.returncode == 0, out.stderr
    other = tmp_path / "other.db"
    doc = synced(gate_cli, "--from", str(tmp_path / "g4.tar.gz"), "--db", str(other))
    assert doc["counts"] == {"added": 1, "updated": 0, "skipped": 0, "refused": 0}
    assert doc["source"] == f"{tmp_path / 'g4.tar.gz'} (evidence pack)"
    uid = store_runs.get_run(site, site_store["g4"]).uid
    assert digests(Store(f"sqlite:///{other}").engine) == {uid: want[uid]}
    # and from the fleet's PostgreSQL back into it: the G3 run added, the G4 skipped
    doc = synced(gate_cli, "--from", pg_url, "--db", str(other))
    assert doc["counts"] == {"added": 1, "updated": 0, "skipped": 1, "refused": 0}
    site.close()
    fleet.close()


def test_a_refused_run_is_named_in_one_line_and_exits_4(gate_cli: GateRunner,
                                                       site_dir: Path,
                                                       site_store: dict[str, int],
                                                       tmp_path: Path) -> None:
    target = tmp_path / "fleet.db"
    synced(gate_cli, "--to", str(target))
    site = Store(f"sqlite:///{site_dir / 'gate.db'}")
    with site.engine.begin() as conn:
        conn.execute(text("UPDATE cell SET verdict = 'STOP-LOSS' WHERE run_id = :r"),
                     {"r": site_store["g3"]})
    uid = store_runs.get_run(site, site_store["g3"]).uid
    site.close()
    before = dump(Store(f"sqlite:///{target}").engine)
    out = gate_cli("sync", "--to", str(target))
    assert error_line(out) == (
        f"gate: error: refused 1 run: test-site/test-campaign G3 run {uid}: its content "
        f"differs from the target's at the same revision (1); the target keeps its own "
        f"(compare both copies with `gate runs show` on each store; every other run "
        f"synced)")
    assert "refused" in out.stdout and "runs: added 0, updated 0, skipped 2, refused 1" \
        in out.stdout
    assert dump(Store(f"sqlite:///{target}").engine) == before
    doc = json.loads(gate_cli("sync", "--to", str(target), "--json").stdout)
    assert doc["counts"]["refused"] == 1


def test_a_dry_run_makes_no_file_and_says_what_it_would_do(gate_cli: GateRunner,
                                                          site_store: dict[str, int],
                                                          tmp_path: Path) -> None:
    target = tmp_path / "fleet.db"
    out = gate_cli("sync", "--to", str(target), "--dry-run")
    assert out.returncode == 0, out.stderr
    assert not target.exists()
    assert "(dry run: nothing written)" in " ".join(out.stdout.split())  # the title
    assert out.stdout.splitlines()[-1] == ("runs: added 2, updated 0, skipped 1, refused 0; "
                                           "new sign-offs 2, sites 1, campaigns 1 (dry run)")


KILLER = """
import os, signal, sys
from harness.store import Store
from harness.store import sync

real, calls = sync.copy_measured, []

def dies_on_the_second(*args):
    calls.append(real(*args))  # the run's rows are written, not yet committed
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return calls[-1]

sync.copy_measured = dies_on_the_second
sync.sync_stores(Store(sys.argv[1]), Store(sys.argv[2]))
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_sync_killed_mid_run_leaves_no_half_run_and_the_next_completes_it(
        gate_cli: GateRunner, site_dir: Path, site_store: dict[str, int], tmp_path: Path,
        backend: str, request: pytest.FixtureRequest) -> None:
    target = (f"sqlite:///{tmp_path / 'fleet.db'}" if backend == "sqlite"
              else str(request.getfixturevalue("pg_url")))
    source = f"sqlite:///{site_dir / 'gate.db'}"
    killed = subprocess.run([sys.executable, "-c", KILLER, source, target],
                            capture_output=True, text=True, timeout=120, check=False)
    assert killed.returncode == -9, killed.stderr
    site, fleet = Store(source), Store(target)
    first, second = (store_runs.get_run(site, site_store[k]).uid for k in ("g3", "g4"))
    want = digests(site.engine)
    assert digests(fleet.engine) == {first: want[first]}  # the second: no trace of it
    assert counts(fleet.engine)["request"] == 6
    doc = synced(gate_cli, "--to", target)
    runs: list[dict[str, str]] = doc["runs"]  # type: ignore[assignment]
    assert {r["uid"]: r["action"] for r in runs} == {
        first: "skipped", second: "added",
        store_runs.get_run(site, site_store["live"]).uid: "skipped"}
    assert digests(fleet.engine) == {first: want[first], second: want[second]}
    site.close()
    fleet.close()


@pytest.mark.parametrize(("args", "says"), [
    (("--to", "notadb://host/x"), "--to: unknown database kind"),
    (("--to", "postgresql+psycopg://gate@127.0.0.1:1/fleet"),
     "--to: cannot open the store: store failed: connection"),
    (("--to", "postgresql+psycopg://gate:s3cret@127.0.0.1:1/fleet"), "carries a password"),
    (("--to", "/nonexistent/dir/fleet.db"), "directory /nonexistent/dir does not exist"),
    (("--from", "/nonexistent/fleet.db"), "no store at /nonexistent/fleet.db"),
    (("--to", "gate.db"), "--to: names this command's own store"),
    ((), "give --to URL or --from URL|PACK (exactly one)"),
    (("--to", "a.db", "--from", "b.db"), "give --to URL or --from URL|PACK (exactly one)"),
])
def test_a_store_that_cannot_be_used_is_one_line_exit_4(
        gate_cli: GateRunner, site_store: dict[str, int], args: tuple[str, ...],
        says: str) -> None:
    out = gate_cli("sync", *args)
    line = error_line(out)
    assert says in line, line
    assert "s3cret" not in out.stdout + out.stderr


def test_the_benchmark_runs_tiny(tmp_path: Path, pg_url: str) -> None:
    """benchmarks/store_sync.py (tests/integration/test_benchmarks_tiny.py's ELSEWHERE):
    "store_sync.py" at a tiny size, its figures' format (never a speed)."""
    out = subprocess.run([sys.executable, str(BENCHMARKS / "store_sync.py"),
                          "--requests", "2000", "--windows", "10", "--pg-url", pg_url],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    patterns = [rf"^fill: G4 run 2000 requests \+ 10 windows in {N} s$",
                rf"^sync SQLite -> PostgreSQL: 2012 rows in {N} s \({N} rows/s\); goal <= 30 s "
                rf"for 1M requests -> {N} of budget$",
                rf"^again, nothing to write \(both digests read\): {N} s$",
                rf"^sync SQLite -> SQLite: 2012 rows in {N} s \({N} rows/s\)$"]
    lines = out.stdout.splitlines()
    assert len(lines) == len(patterns), out.stdout
    for pattern, line in zip(patterns, lines, strict=True):
        assert re.match(pattern, line), (pattern, line)
