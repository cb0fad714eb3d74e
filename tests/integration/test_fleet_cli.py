"""`gate fleet` as a user runs it (a subprocess): `--json` with each campaign's verdicts,
flags, G3 figures and a soak in progress, on SQLite and PostgreSQL; the table at 80
columns with no verdict cut and no line past 80; a bad date or an unknown site is one
line and exit 4."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gate_testing import REPO, GateRunner

from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store import windows as store_windows


def run(store: Store, campaign: str, site: str, gate: str, verdict: str | None,
        **kw: Any) -> int:
    ends = {k: kw.pop(k) for k in ("partial", "needs_signoff") if k in kw}
    finish = kw.pop("finish", True)
    rid = store_runs.start_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=f"{site.title()} Corp", kind="gate",
        gate=gate, config_json=kw.pop("config_json", {"site": {"vendor": "FastKV"}}), **kw))
    if finish:
        store_runs.finish_run(store, rid, verdict=verdict, reason="", **ends)
    return rid


@pytest.fixture
def fleet_store(store_url: str) -> str:
    """acme/poc: G1 PASS (forced, simulated), G2 above band signed, G3 PASS with three
    cells, G4 soaking (12 of 120 windows); globex-datacenter-east/trial-with-a-long-name:
    G1 STOP-LOSS, then a partial run, G3 INCONCLUSIVE unsigned."""
    store = Store(store_url)
    try:
        run(store, "poc", "acme", "G1", "PASS", forced=True, simulated=True)
        g2 = run(store, "poc", "acme", "G2", "INCONCLUSIVE", needs_signoff=True)
        store_runs.add_signoff(store, g2, role="reviewer", name="rita", note="fine")
        g3 = run(store, "poc", "acme", "G3", "PASS")
        for (layout, tier), (drop, gain) in {("TP8", 4): (0.52, 0.41),
                                             ("TP8", 16): (0.31, 0.45),
                                             ("TP8", 32): (0.38, 0.22)}.items():
            writer.upsert_cell(store, g3, {"layout": layout, "tier": tier, "verdict": "PASS",
                                           "drop": drop, "gain": gain})
        g4 = run(store, "poc", "acme", "G4", None, finish=False, config_json={
            "gates": {"g4": {"duration": 7200, "window": 60, "baseline": 600}}})
        store_windows.upsert_windows(store, g4, [
            {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 5}
            for k in range(12)])
        long = ("trial-with-a-long-name", "globex-datacenter-east")
        run(store, *long, "G1", "STOP-LOSS")
        run(store, *long, "G1", "PASS", partial=True)
        run(store, *long, "G3", "INCONCLUSIVE", needs_signoff=True)
    finally:
        store.close()
    return store_url


def fleet(gate_cli: GateRunner, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return gate_cli("fleet", *args, env={"GATE_DB": url, "COLUMNS": "80"})


def test_json_says_verdicts_flags_figures_and_the_soak(gate_cli: GateRunner,
                                                       fleet_store: str) -> None:
    out = fleet(gate_cli, fleet_store, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["filters"] == {"site": None, "customer": None, "accelerator": None,
                              "since": None}
    acme, globex = doc["campaigns"]
    assert (acme["ref"], acme["customer"], acme["vendor"]) == ("acme/poc", "Acme Corp",
                                                              "FastKV")
    g1, g2, g3, g4 = acme["gates"]
    assert (g1["verdict"], g1["flags"]) == ("PASS", ["FORCED", "SIMULATED"])
    assert (g2["verdict"], g2["flags"], g2["signed"]) == ("PASS", ["WEAKENED"], True)
    assert g1["date"].endswith("+00:00")
    assert g3["verdict"] == "PASS"
    assert [(c["tier"], c["drop"], c["gain"]) for c in g3["cells"]] == [
        (4, 0.52, 0.41), (16, 0.31, 0.45), (32, 0.38, 0.22)]
    assert g3["worst"] == {"drop": {"value": 0.31, "where": "c=16"},
                           "gain": {"value": 0.22, "where": "c=32"}}
    assert g4["verdict"] == "not run"
    assert (g4["running"]["windows"], g4["running"]["planned"]) == (12, 120)
    h1, _, h3, _ = globex["gates"]
    assert (h1["verdict"], h1["partial_later"]["verdict"]) == ("STOP-LOSS", "PASS")
    assert (h3["verdict"], h3["flags"], h3["signed"]) == ("INCONCLUSIVE", ["WEAKENED"],
                                                         False)
    out = fleet(gate_cli, fleet_store, "--json", "--customer", "GLOBEX")
    assert [c["ref"] for c in json.loads(out.stdout)["campaigns"]] == [
        "globex-datacenter-east/trial-with-a-long-name"]


def test_the_table_fits_80_columns_with_every_verdict_whole(gate_cli: GateRunner,
                                                            fleet_store: str) -> None:
    out = fleet(gate_cli, fleet_store)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, out.stdout
    assert "…" not in out.stdout  # nothing cut
    assert "fleet: 2 campaigns in 2 sites" in lines[0]
    header = next(line for line in lines if "site/campaign" in line)
    assert [w for w in header.split() if w.startswith("G")] == ["G1", "G2", "G3", "G4"]
    words = out.stdout.split()
    for whole in ("PASS", "STOP-LOSS", "INCONCLUSIVE", "FORCED", "SIMULATED", "WEAKENED",
                  "(signed)", "(unsigned)", "RUNNING", "12/120", "PARTIAL", "31%", "22%",
                  "c=16", "c=32"):
        assert whole in words, (whole, out.stdout)
    assert "acme/poc" in words and "vendor" in words


def test_a_bad_date_or_an_unknown_site_is_one_line_exit_4(gate_cli: GateRunner,
                                                          fleet_store: str) -> None:
    for args, said in ((("--since", "last tuesday"),
                        "gate: error: --since: not a date: 'last tuesday' (a day as "
                        "YYYY-MM-DD, e.g. 2026-12-01)"),
                       (("--site", "nowhere"),
                        "gate: error: no site 'nowhere' in ")):
        out = fleet(gate_cli, fleet_store, *args)
        assert out.returncode == 4, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr
        assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith(said), out.stderr
    out = fleet(gate_cli, fleet_store, "--since", "2999-01-01")
    assert out.returncode == 0 and out.stdout.strip() == "no campaign matches the filters"


@pytest.mark.slow
def test_the_benchmark_runs_at_a_tiny_size(tmp_path: Path, pg_url: str) -> None:
    """benchmarks/fleet.py (tests/integration/test_benchmarks_tiny.py's convention): its
    figures' labels and format, on both stores; never a speed."""
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "fleet.py"),
                          "--campaigns", "3", "--repeat", "1", "--pg-url", pg_url],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    n = r"[0-9]+(?:\.[0-9]+)?"
    expected = [rf"^{db}: {line}$" for db in ("sqlite", "postgresql") for line in (
        rf"fill 3 campaigns x 4 gates \(22 runs, 2160 soak windows\) in {n} s",
        rf"query median {n} ms, best {n} ms; 6 SELECTs",
        rf"`gate fleet` median {n} s, `--json` {n} s; goal <= 1 s -> ratio {n}",
        rf"of which start-up \(`gate fleet --since 2999-01-01`, nothing listed\) "
        rf"median {n} s",
        rf"CPU \(user \+ sys\) median: `gate fleet` {n} s, `--json` {n} s, start-up {n} s")]
    rows = out.stdout.splitlines()
    assert len(rows) == len(expected) + 1, out.stdout
    for pattern, row in zip(expected, rows, strict=False):
        assert re.match(pattern, row), (pattern, row)
    assert re.match(rf"^load average: {n} at the start, {n} at the end, on \d+ cores$",
                    rows[-1]), rows[-1]
