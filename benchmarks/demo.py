"""`gate demo` end to end: wall time and where it goes, read back from the demo's store.

Goal (issue 6): the whole default demo <= 3 min on 2 cores. The breakdown says which
lever moves it: engine actions (start / restart / stop), load phases (warm / measured),
the rest of G3 (calibration, scrapes, decisions), and what is outside the G3 run
(site setup, the report).

Run: .venv/bin/python benchmarks/demo.py [--runs N] [--scenario default] [--keep]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def breakdown(db: Path) -> dict[str, float]:
    con = sqlite3.connect(db)
    try:
        started, finished = con.execute(
            "select started_at, finished_at from run where gate = 'G3'").fetchone()
        out = {"g3 run": finished - started}
        for verb in ("start", "restart", "stop"):
            spans = con.execute(  # an arm's instances act at once: wall time, not a sum
                "select at - duration, at from event where source = 'action' and name like ?",
                (f"% {verb} %",)).fetchall()
            out[f"actions: {verb}"] = _union(spans)
        for phase in ("warm", "measured"):
            out[f"phases: {phase}"] = con.execute(
                "select coalesce(sum(duration), 0) from benchmark where phase = ?",
                (phase,)).fetchone()[0]
        out["g3 other (calibration, scrapes, decisions)"] = out["g3 run"] - sum(
            v for k, v in out.items() if k.startswith(("actions", "phases")))
        out["pairs"] = con.execute("select coalesce(sum(repetitions), 0) from cell").fetchone()[0]
        return out
    finally:
        con.close()


def _union(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by the intervals (overlaps counted once)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def one_demo(scenario: str, out: Path) -> tuple[float, int, dict[str, float]]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "demo", "--out", str(out),
                           "--scenario", scenario], capture_output=True, text=True)
    wall = time.monotonic() - t0
    site = next(p for p in out.iterdir() if p.is_dir())
    parts = breakdown(site / "gate.db")
    parts["outside g3 (setup, report)"] = wall - parts["g3 run"]
    return wall, proc.returncode, parts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--scenario", default="default")
    ap.add_argument("--keep", action="store_true", help="keep the demo directories")
    args = ap.parse_args()
    walls: list[float] = []
    for i in range(args.runs):
        out = Path(tempfile.mkdtemp(prefix="gate-demo-bench-"))
        wall, code, parts = one_demo(args.scenario, out)
        walls.append(wall)
        print(f"run {i + 1}: {wall:6.1f} s  exit {code}  ({out if args.keep else 'removed'})")
        for key, value in parts.items():
            shown = f"{value:.0f}" if key == "pairs" else f"{value:6.1f} s"
            print(f"    {key:<44} {shown}")
        if not args.keep:
            subprocess.run(["rm", "-rf", str(out)], check=False)
    goal = 180.0
    print(f"\nwall: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s; "
          f"goal <= {goal:.0f} s -> ratio {statistics.median(walls) / goal:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
