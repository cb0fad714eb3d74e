"""G2's serving baseline against simulated engines (the one-cell site of tests/g3_site.py):
the baseline arm started by its own start action, measured through the phase seam, its
phases stored, its prefill throughput recorded, its engine stopped at the end. A
baseline arm that fails part of its requests is STOP-LOSS: the requests were sent and
answered with errors, so the criterion "no failed requests" was measured and missed
(a phase where every request failed measured nothing and is ERROR instead,
tests/unit/test_g2_serving.py and harness/serving/phase_checks.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from g3_site import Site, one_cell_site

from harness import __version__
from harness.g2.serving_run import SPARES

# Slower than the demo's x30: at x30 a TTFT is ~50 ms and a busy shared machine's
# scheduling noise alone moves a repetition's p50 by a third.
SPEED = "10"
SERVING = {"layouts": ["TP8"], "tiers": [4], "repetitions": 2, "docs": 8, "max_cv": 0.25}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with one_cell_site(tmp_path_factory.mktemp("g2serving")) as made:
        start = dict(made.arm("baseline")["start"])  # type: ignore[call-overload]
        argv = list(start["command"])
        argv[argv.index("--speed") + 1] = SPEED
        made.edit({"arms": {"baseline": {"start": {**start, "command": argv}}},
                   "gates": {"g2": {"fio": [], "gpu_health": False, "gdsio": None,
                                    "serving": SERVING}}})
        yield made


def checks_of(site: Site, run_id: int) -> dict[str, dict[str, object]]:
    checks = site.run_json(run_id)["checks"]
    assert isinstance(checks, list)
    by_name = {str(c["name"]): dict(c) for c in checks}
    assert sorted(by_name) == ["test_engine_version", "test_serving"]
    return by_name


def serving_check(site: Site, run_id: int) -> dict[str, object]:
    return checks_of(site, run_id)["test_serving"]


def test_serving_baseline_passes_and_records_prefill(site: Site) -> None:
    out = site.gate("run", "G2", "--force")
    assert out.returncode == 0, out.stdout + out.stderr[-2000:]
    check = serving_check(site, 1)
    assert check["nodeid"].endswith("test_serving[TP8-c4]")  # type: ignore[union-attr]
    assert check["outcome"] == "PASS" and check["host"] == "gpu1"
    assert "2 reps: TTFT p50" in str(check["measured"])
    # the engine the serving baseline started is the one the software BOM orders (the
    # demo's BOM: gate-harness, which the simulator reports as "gate-sim <version>")
    engine = checks_of(site, 1)["test_engine_version"]
    assert engine["outcome"] == "PASS", engine
    assert str(engine["expected"]).startswith("gpu1: gate-harness ")
    assert ": gate-harness " in str(engine["measured"])
    # (a repetition a busy host disturbed is measured again: the one it replaced stays,
    # SUPERSEDED, out of every count)
    phases = site.query("SELECT phase, arm, layout, tier, status FROM benchmark "
                        "WHERE run_id = 1 AND status != 'SUPERSEDED' ORDER BY id")
    assert phases == [("warm", "baseline", "TP8", 4, "FINISHED")] + [
        ("serving", "baseline", "TP8", 4, "FINISHED")] * 2
    requests = site.query("SELECT COUNT(*) FROM request r JOIN benchmark b "
                          "ON r.benchmark_id = b.id WHERE b.phase = 'serving' "
                          "AND b.status = 'FINISHED'")
    assert requests == [(16,)]
    (fact,) = site.query("SELECT value FROM host_fact WHERE key = 'serving prefill TP8-c4'")
    assert json.loads(str(fact[0]))["tokens_per_s"] > 0
    # the engine it started is gone: nothing recorded is still open
    assert site.query("SELECT COUNT(*), SUM(stopped_at IS NULL) FROM engine_process "
                      "WHERE run_id = 1") == [(1, 0)]


def test_failing_baseline_is_stop_loss(site: Site) -> None:
    start = dict(site.arm("baseline")["start"])  # type: ignore[call-overload]
    start["command"] = [*start["command"], "--error-rate", "0.3"]
    # ... and the BOM orders another engine version than the one running: STOP-LOSS too
    site.edit({"arms": {"baseline": {"start": start}},
               "gates": {"g1": {"bom": {"gpu": {"software": {"packages": {
                   "gate-harness": "0.0.9"}}}}}}})
    out = site.gate("run", "G2", "--force")
    assert out.returncode == 1, out.stdout + out.stderr[-2000:]
    check = serving_check(site, 2)
    assert check["outcome"] == "STOP-LOSS"
    assert "TP8-c4 baseline: " in str(check["message"])
    assert "requests failed (at most 0.0%)" in str(check["message"])
    engine = checks_of(site, 2)["test_engine_version"]
    assert engine["outcome"] == "STOP-LOSS"
    assert f"runs gate-harness {__version__}, the BOM orders 0.0.9" in str(engine["message"])


def test_a_disturbed_repetition_is_measured_again_on_spare_documents(site: Site) -> None:
    """A loop-lag bound no client can meet stands for a starved load generator: each
    repetition is measured again on spare documents (never the ones the engine has just
    cached) until the spares are spent, the replaced phases kept, and the cell, still
    disturbed, is INCONCLUSIVE, never judged on a starved client's timings."""
    start = dict(site.arm("baseline")["start"])  # type: ignore[call-overload]
    argv = list(start["command"])
    if "--error-rate" in argv:  # the previous test's failing baseline
        del argv[argv.index("--error-rate"):argv.index("--error-rate") + 2]
    site.edit({"arms": {"baseline": {"start": {**start, "command": argv}}},
               "load": {"health": {"max_loop_lag_p99_ms": 0.000001}},
               "gates": {"g1": {"bom": {"gpu": {"software": {"packages": {
                   "gate-harness": __version__}}}}}}})  # the previous test's other version
    out = site.gate("run", "G2", "--force")
    assert out.returncode == 2, out.stdout + out.stderr[-2000:]
    (run_id,), = site.query("SELECT max(id) FROM run")
    check = serving_check(site, int(str(run_id)))
    assert check["outcome"] == "INCONCLUSIVE"
    assert "client saturated (event-loop lag p99" in str(check["message"])
    rows = site.query(f"SELECT phase, status FROM benchmark WHERE run_id = {run_id} "
                      "ORDER BY id")
    assert rows[0] == ("warm", "FINISHED")  # the warm phase is never replaced
    assert rows.count(("serving", "SUPERSEDED")) == SPARES  # the spares, then given up
    assert rows.count(("serving", "FINISHED")) == 2
    again = site.query(f"SELECT name FROM event WHERE run_id = {run_id} "
                       "AND name LIKE '%measured again'")
    assert len(again) == SPARES
