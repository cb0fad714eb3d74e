"""`gate fleet` over a fleet-sized store: the query's and the command's seconds.

Goal (issue 28 item 4): `gate fleet` over 100 campaigns x 4 gates in <= 1 s, the command
as a user runs it (a new Python, imports, the store opened, the table printed). The store
is filled through the store API: per campaign two attempts of each of G1..G3 (the later
G2 above band and signed), G3 with 2 layouts x 3 tiers of cells, a finished G4 and, in
every tenth campaign, a G4 soaking with half its windows stored; each run carries a real
site config (SiteConfig's dump, ~3 KB). Timed on SQLite and, with --pg-url (or a
throwaway cluster as the tests start one, tests/pg_support), on PostgreSQL.
Run: .venv/bin/python benchmarks/fleet.py [--campaigns 100] [--repeat 5] [--pg-url URL]
     [--no-pg]
Each command's CPU seconds are printed too: on cores shared with other jobs its wall time
is mostly waiting for a core. Run it with bytecode allowed (not PYTHONDONTWRITEBYTECODE=1,
or with PYTHONPYCACHEPREFIX set), as an installed gate runs: without it each command
compiles harness's modules again, ~0.2 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event

from harness.config.models import SiteConfig
from harness.registry import GATE_IDS
from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store import windows as store_windows
from harness.store.fleet import fleet

REPO = Path(__file__).resolve().parents[1]
GOAL = 1.0  # seconds for `gate fleet` over 100 campaigns x 4 gates
SOAK_WINDOWS = 4320  # a 72 h soak of 60 s windows


def config(site: str, campaign: str) -> dict[str, Any]:
    return SiteConfig.model_validate({
        "site": {"name": site, "customer": f"{site} corp", "vendor": "FastKV"},
        "campaign": {"name": campaign}, "model": {"name": "r1-qwen32b"}}
    ).model_dump(mode="json")


def run(store: Store, site: str, campaign: str, gate: str, verdict: str | None,
        needs_signoff: bool = False) -> int:
    rid = store_runs.start_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=f"{site} corp", kind="gate", gate=gate,
        config_json=config(site, campaign)))
    if verdict is not None:
        store_runs.finish_run(store, rid, verdict=verdict, reason="",
                              needs_signoff=needs_signoff)
    return rid


def fill(url: str, campaigns: int) -> tuple[int, int]:
    """The fleet; (runs, soak windows) written."""
    store = Store(url)
    runs = windows = 0
    try:
        for i in range(campaigns):
            site, name = f"site{i % 10:02d}", f"poc{i:03d}"
            for gate in ("G1", "G2", "G3"):
                run(store, site, name, gate, "STOP-LOSS")
                rid = run(store, site, name, gate, "INCONCLUSIVE" if gate == "G2" else "PASS",
                          needs_signoff=gate == "G2")
                runs += 2
                if gate == "G2":
                    store_runs.add_signoff(store, rid, role="reviewer", name="r", note="ok")
                if gate == "G3":
                    for layout in ("TP8", "TP4x2"):
                        for k, tier in enumerate((4, 8, 16)):
                            writer.upsert_cell(store, rid, {
                                "layout": layout, "tier": tier, "verdict": "PASS",
                                "drop": 0.3 + 0.05 * k, "gain": 0.25 + 0.05 * k})
            run(store, site, name, "G4", "PASS")
            runs += 1
            if i % 10 == 0:
                rid = run(store, site, name, "G4", None)
                half = SOAK_WINDOWS // 2
                store_windows.upsert_windows(store, rid, [
                    {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 230}
                    for k in range(half)])
                runs += 1
                windows += half
    finally:
        store.close()
    return runs, windows


def query(url: str, repeat: int) -> tuple[list[float], int, int]:
    """(seconds of each fleet() read, SELECTs in one, campaigns found)."""
    store = Store(url)
    selects: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            selects.append(statement)

    try:
        fleet(store, GATE_IDS)  # a warm connection, as the command has after its open
        event.listen(store.engine, "before_cursor_execute", note)
        took = []
        for _ in range(repeat):
            selects.clear()
            t = time.perf_counter()
            found = fleet(store, GATE_IDS)
            took.append(time.perf_counter() - t)
    finally:
        store.close()
    return took, len(selects), len(found)


CPU: dict[str, list[float]] = {}  # command label -> CPU seconds (user + sys) of each


def command(url: str, repeat: int, *args: str) -> list[float]:
    """Seconds of each `gate fleet ARGS` in a new process, at 80 columns; its CPU seconds
    go to CPU (on 2 cores shared with other jobs the wall time is mostly waiting for a
    core, the CPU time is what the command costs)."""
    env = {**os.environ, "GATE_DB": url, "COLUMNS": "80"}
    took, cpu = [], CPU.setdefault(" ".join(args), [])
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "harness", "fleet", *args], env=env,
                             capture_output=True, text=True, check=False)
        took.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if out.returncode != 0:
            sys.exit(f"gate fleet {' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return took


def measure(label: str, url: str, campaigns: int, repeat: int) -> None:
    t = time.perf_counter()
    runs, windows = fill(url, campaigns)
    print(f"{label}: fill {campaigns} campaigns x 4 gates ({runs} runs, {windows} soak "
          f"windows) in {time.perf_counter() - t:.1f} s")
    took, selects, found = query(url, repeat)
    assert found == campaigns, (found, campaigns)
    print(f"{label}: query median {statistics.median(took) * 1000:.0f} ms, "
          f"best {min(took) * 1000:.0f} ms; {selects} SELECTs")
    CPU.clear()
    table, as_json = command(url, repeat), command(url, repeat, "--json")
    worst = max(statistics.median(table), statistics.median(as_json))
    print(f"{label}: `gate fleet` median {statistics.median(table):.2f} s, `--json` "
          f"{statistics.median(as_json):.2f} s; goal <= {GOAL:.0f} s -> ratio "
          f"{worst / GOAL:.2f}")
    # what every store command pays before its own work: a new Python, imports, the
    # store opened (its migration checked), the runs read, nothing shown
    start = command(url, repeat, "--since", "2999-01-01")
    print(f"{label}: of which start-up (`gate fleet --since 2999-01-01`, nothing listed) "
          f"median {statistics.median(start):.2f} s")
    print(f"{label}: CPU (user + sys) median: `gate fleet` {statistics.median(CPU['']):.2f} s, "
          f"`--json` {statistics.median(CPU['--json']):.2f} s, start-up "
          f"{statistics.median(CPU['--since 2999-01-01']):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5, help="timings per figure (median)")
    ap.add_argument("--pg-url", default=None,
                    help="an empty PostgreSQL database (default: a throwaway cluster)")
    ap.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        measure("sqlite", f"sqlite:///{d}/fleet.db", args.campaigns, args.repeat)
    if not args.no_pg:
        sys.path.insert(0, str(REPO / "tests"))
        from pg_support import database_url

        with database_url(args.pg_url) as pg_url:
            measure("postgresql", pg_url, args.campaigns, args.repeat)
    print(f"load average: {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
