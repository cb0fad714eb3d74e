"""The adversarial review's routes to a wrong G3 PASS, each against the simulated lab
with a one-cell site (TP8, tier 4, 3-5 pairs, speed 30): every one ends not PASS now.

1. pytest options that change what is collected (`-o python_functions=...`) -> refused.
2. `--suite ./fake` -> recorded on the run, never the gate's verdict.
3. a baseline engine started or restarted slower (`--speed 21.9`) -> ERROR, arms differ.
4. a loosened failed-request guard (`max_failed_share: 0.5`) -> refused at load.
5. a proxy inflating the accelerated arm's usage.completion_tokens (declared, and read
   like an engine) -> INCONCLUSIVE.
6. kill -9 mid-run, then resume -> nothing left running, nothing counted twice.
Plus: the sudo password never reaches an engine, the store or an artifact (7), and
every earlier attempt of the gate shows in `gate status` (10).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from g3_site import Site, one_cell_site
from gate_testing import GATE
from sim_support.lying_proxy import lying_proxy

if TYPE_CHECKING:
    from demo_fixtures import Demo

pytest_plugins = ["demo_fixtures"]
pytestmark = pytest.mark.slow

SECRET = "sudo-pw-must-not-leak-4711"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def engines_alive(site: Site) -> list[int]:
    """Engines the site's runs recorded that still run (pid and start time both match)."""
    from harness.sim.procs import alive

    rows = site.query("SELECT pid, start_ticks FROM engine_process")
    assert rows
    return [int(pid) for pid, ticks in rows if alive(int(pid), int(ticks))]  # type: ignore


# -- 1 and 10 --------------------------------------------------------------------------
def test_options_that_change_collection_are_refused_and_a_subset_is_never_pass(
        site: Site) -> None:
    refused = site.gate("run", "G3", "--force", "--", "-o", "python_functions=test_arms_*")
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "'-o' is not allowed" in refused.stderr and "Traceback" not in refused.stderr
    assert site.query("SELECT count(*) FROM run") == [(0,)]  # refused before anything
    partial = site.gate("run", "G3", "--force", "--", "-k", "same_model")
    assert partial.returncode == 2, partial.stdout + partial.stderr[-2000:]
    assert "PARTIAL: 1 of 5 planned checks ran" in " ".join(partial.stdout.split())
    status = json.loads(site.gate("status", "--json").stdout)
    g3 = next(g for g in status["gates"] if g["gate"] == "G3")
    assert g3["verdict"] == "not run"  # a partial run never stands for the gate
    assert [(a["run"], a["verdict"], a["partial"]) for a in g3["attempts"]] == \
        [(1, "INCONCLUSIVE", True)]


# -- 2 ---------------------------------------------------------------------------------
def test_a_custom_suite_is_recorded_and_never_the_gates_verdict(site: Site,
                                                                 tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "test_fake.py").write_text("def test_cell():\n    assert True\n")
    out = site.gate("run", "G3", "--force", "--suite", str(fake))
    assert "never the gate's verdict" in out.stderr
    # The fake suite passes, but it reads nothing simulated on a `simulated: true` site,
    # so its run is no PASS either (test_simulated_true_where_nothing_is_simulated...).
    assert out.returncode == 2 and "nothing this run read answered as simulated" in \
        " ".join(out.stdout.split())  # the outcome line wraps between words
    run = site.run_json(1)
    assert str(run["suite"]).startswith(str(fake.resolve())) and "sha256:" in str(run["suite"])
    status = json.loads(site.gate("status", "--json").stdout)
    assert next(g for g in status["gates"] if g["gate"] == "G3")["verdict"] == "not run"
    listed = json.loads(site.gate("runs", "list", "--json").stdout)
    assert listed[0]["suite"] == run["suite"]


# -- 3 ---------------------------------------------------------------------------------
def test_a_baseline_started_slower_is_error_before_anything_is_measured(site: Site) -> None:
    base = site.arm("baseline")
    start = dict(base["start"])  # type: ignore[arg-type]
    start["command"] = [("21.9" if w == "30.0" else w) for w in start["command"]]
    site.edit({"arms": {"baseline": {"start": start}}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 3, out.stdout + out.stderr[-2000:]
    checks = {c["name"]: c for c in site.run_json(1)["checks"]}  # type: ignore[attr-defined]
    differ = checks["test_arms_differ_only_by_the_accelerator"]
    assert differ["outcome"] == "ERROR" and "speed (baseline 21.9, accelerated 30" in \
        differ["message"]
    assert checks["test_cell"]["outcome"] == "ERROR"
    assert site.query("SELECT count(*) FROM request") == [(0,)]


def test_a_baseline_restarted_slower_is_caught_at_its_first_pair(site: Site) -> None:
    """The start is honest, so the preflight passes; the cold restart before each
    measured phase brings the baseline back slower. The engines are read again after
    every restart: the cell is ERROR, never PASS."""
    base = site.arm("baseline")
    start = list(base["start"]["command"])  # type: ignore[index]
    stop = list(base["stop"]["command"])  # type: ignore[index]
    slower = [("21.9" if w == "30.0" else w) for w in start]
    script = " ; ".join(" ".join(f"'{w}'" for w in argv) for argv in (stop, slower))
    site.edit({"arms": {"baseline": {"restart": {"command": ["sh", "-c", script]}}}})
    out = site.gate("run", "G3", "--force", GATE_SUDO_PASSWORD=SECRET)
    assert out.returncode == 3, out.stdout + out.stderr[-2000:]
    checks = {c["name"]: c for c in site.run_json(1)["checks"]}  # type: ignore[attr-defined]
    assert checks["test_arms_differ_only_by_the_accelerator"]["outcome"] == "PASS"
    cell = checks["test_cell"]
    assert cell["outcome"] == "ERROR" and "repetition 1: arms differ in" in cell["message"]
    assert "speed" in cell["message"]
    assert site.query("SELECT count(DISTINCT repetition) FROM benchmark") == [(1,)]
    assert_secret_nowhere(site)


# -- 4 ---------------------------------------------------------------------------------
def test_a_loosened_failure_guard_is_refused_at_load(site: Site) -> None:
    site.edit({"gates": {"g3": {"evidence": {"max_failed_share": 0.5}}}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 4
    assert "gates.g3.evidence.max_failed_share" in out.stderr and "<= 0.05" in out.stderr
    assert not (site.root / "gate.db").exists()  # refused before the store was opened


# -- 5 ---------------------------------------------------------------------------------
def test_a_proxy_inflating_token_counts_cannot_pass(site: Site) -> None:
    """The accelerated arm's endpoint is a proxy that raises usage.completion_tokens by
    4.8 % (inside the old 5 % tolerance, which then turned a STOP-LOSS into a PASS). The
    throughput counts the fixed output length, and the server's count must agree.

    A proxy in front of an engine must be declared (arms.<arm>.proxies) and is read and
    compared between the arms like an engine: the baseline goes through the same proxy
    program, honest, and the arms may differ in its --usage-factor alone (an undocumented
    difference: a sign-off would be needed, but the token check decides first)."""
    cfg = yaml.safe_load(site.config.read_text())
    port = cfg["layouts"][0]["instances"][0]["port"]
    upstream = f"http://127.0.0.1:{port}"
    differs = [*site.arm("accelerated")["differs_by"], "proxy:argv:--usage-factor"]  # type: ignore
    with lying_proxy(upstream) as honest, lying_proxy(upstream, usage_factor=1.048) as lying:
        site.edit({"arms": {
            "baseline": {"endpoints": {"TP8": [honest]}, "proxies": {honest: {}}},
            "accelerated": {"endpoints": {"TP8": [lying]}, "proxies": {lying: {}},
                            "differs_by": differs}}})
        out = site.gate("run", "G3", "--force", GATE_SUDO_PASSWORD=SECRET)
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    found = {c["name"]: c for c in site.run_json(1)["checks"]}  # type: ignore[attr-defined]
    assert found["test_arms_differ_only_by_the_accelerator"]["outcome"] == "PASS"
    cell = found["test_cell"]
    assert cell["outcome"] == "INCONCLUSIVE"
    assert "token counts disagree: accelerated arm" in cell["message"]
    params = site.query("SELECT params FROM benchmark WHERE phase='measured' LIMIT 1")
    assert json.loads(str(params[0][0]))["fixed_output"] == {"max_tokens": 128,
                                                             "ignore_eos": True}
    reading = [json.loads(str(v)) for (v,) in site.query(
        "SELECT value FROM host_fact WHERE key = 'engine identity accelerated TP8#0'")]
    assert reading and reading[0]["facts"]["proxy:argv:--usage-factor"] == "1.048"
    assert_secret_nowhere(site)


# -- 6 ---------------------------------------------------------------------------------
def wait_for(site: Site, sql: str, deadline_s: float = 300) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            if site.query(sql)[0][0]:
                return
        except sqlite3.Error:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {sql}")


def test_kill_minus_9_then_resume_leaves_nothing_running_and_counts_nothing_twice(
        site: Site) -> None:
    # Up to 8 pairs: this test needs the cell decided PASS after the resume, and at 5
    # pairs the c=4 gain's interval (~0.33 vs 0.29) sometimes still straddles.
    site.edit({"gates": {"g3": {"repetitions": {"min": 3, "max": 8}}}})
    proc = subprocess.Popen([*GATE, "run", "G3", "--force"], cwd=site.root, env=site.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Killed inside the second pair, after one of its arms was measured, with an engine up.
    wait_for(site, "SELECT count(*) FROM benchmark WHERE repetition=1 AND "
                   "phase='warm' AND status='FINISHED' AND arm IN (SELECT arm FROM "
                   "benchmark WHERE repetition=1 AND phase='measured' AND "
                   "status='FINISHED')")
    wait_for(site, "SELECT count(*) FROM engine_process WHERE stopped_at IS NULL")
    proc.kill()
    proc.wait(timeout=30)
    left = site.query("SELECT pid FROM engine_process WHERE stopped_at IS NULL")
    assert left, "the kill should leave an engine running"
    status = site.gate("status")
    said = " ".join(status.stdout.split())  # a note wraps between words
    assert "process (pid" in said and "gate resume 1" in said
    refused = site.gate("run", "G3", "--force")
    assert refused.returncode == 4 and "whose process is gone" in refused.stderr
    resumed = site.gate("resume", "1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr[-3000:]
    assert site.query("SELECT count(*) FROM engine_process WHERE stopped_at IS NULL") == [(0,)]
    assert engines_alive(site) == []
    checks = [(c["name"], c["outcome"]) for c in site.run_json(1)["checks"]]  # type: ignore
    assert len(checks) == 5 and all(o == "PASS" for _, o in checks), checks
    # The interrupted pair's finished arm is kept, marked replaced; each arm of each
    # repetition counts once.
    assert site.query("SELECT count(*) FROM benchmark WHERE status='SUPERSEDED'")[0][0] >= 2
    counted = site.query("SELECT repetition, arm, count(*) FROM benchmark WHERE "
                         "phase='measured' AND status='FINISHED' GROUP BY 1, 2")
    assert all(n == 1 for *_, n in counted)
    again = site.gate("resume", "1")
    assert again.returncode == 4 and "finished" in again.stderr


def test_a_resume_replays_stored_pairs_to_the_same_decision(demo_default: Demo,
                                                            tmp_path: Path) -> None:
    """A crash after the pairs were stored but before the cells' decisions: the resume
    decides again from the stored pairs (never 'look 3 but 4 pairs given'), measures
    nothing new, and reaches the same decisions with one check row each.

    On a copy of the README demo's store (tests/demo_fixtures.py, run once a session): six
    cells, each decided from 3 to 8 pairs (a cell that took pairs past its first look is
    replayed look by look). The copy's config names the demo's own directories and ports
    (a resume needs the same config): the preflight's engines start there again, on the
    demo's ports, leased again meanwhile."""
    first = demo_default.out
    assert first.returncode in (0, 1, 2), first.stdout + first.stderr[-2000:]
    g3 = demo_default.g3_run()
    run = int(g3["id"])  # type: ignore[call-overload]
    # G3's own exit code (the demo's is its last gate's: G4's, after a G3 PASS)
    g3_exit = {"PASS": 0, "STOP-LOSS": 1, "INCONCLUSIVE": 2}[str(g3["verdict"])]
    copy = demo_default.copy_site(tmp_path / "site") / "gate.db"
    cells = ("SELECT layout, tier, verdict, repetitions, gain, gain_lo, drop_lo FROM cell "
             f"WHERE run_id = {run} ORDER BY layout, tier")
    with closing(sqlite3.connect(copy)) as conn, conn:  # what a crash would have left
        before = list(conn.execute(cells))
        phases = list(conn.execute("SELECT count(*) FROM benchmark"))
        conn.execute(f"DELETE FROM cell WHERE run_id = {run}")
        conn.execute(f"DELETE FROM \"check\" WHERE name = 'test_cell' AND run_id = {run}")
        conn.execute("UPDATE run SET status='RUNNING', verdict=NULL, finished_at=NULL, "
                     f"pid=999999 WHERE id = {run}")
    with demo_default.ports_held():
        resumed = demo_default.gate("resume", str(run), db=copy)
    assert resumed.returncode == g3_exit, resumed.stdout + resumed.stderr[-2000:]
    with closing(sqlite3.connect(copy)) as conn:
        assert list(conn.execute(cells)) == before
        assert list(conn.execute("SELECT count(*) FROM benchmark")) == phases  # nothing new
    shown = demo_default.run_json(run, db=copy)["checks"]
    assert isinstance(shown, list)
    names = [c["nodeid"] for c in shown]  # a check's name repeats across layouts and tiers
    # one check row each: 2 layouts x 4 preflight checks, 2 layouts x 3 cells
    assert sorted(names) == sorted(set(names)) and len(names) == 14


# -- 7 ---------------------------------------------------------------------------------
def assert_secret_nowhere(site: Site) -> None:
    """The run's store, artifacts and engine logs never hold the sudo password, and no
    engine was started with it in its environment (the engines' recorded facts list
    their environment)."""
    facts = site.query("SELECT value FROM host_fact WHERE key LIKE 'engine identity%'")
    assert facts
    for (value,) in facts:
        assert "GATE_SUDO_PASSWORD" not in str(value)
    for path in site.root.rglob("*"):
        if path.is_file() and not path.is_socket():
            assert SECRET.encode() not in path.read_bytes(), path
