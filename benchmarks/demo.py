"""`gate demo` end to end: wall time and where it goes, read back from the demo's store.

Goal (issue 6): the whole default demo <= 3 min on 2 cores. The breakdown says which
lever moves it: each gate's run, and within G3's engine actions (start / restart / stop),
load phases (warm / measured) and the rest (calibration, scrapes, decisions), and what is
outside the gate runs (site setup, the report). G2's serving baseline starts engines and
runs load phases too: those are counted in G2's run, not G3's.

Run: .venv/bin/python benchmarks/demo.py [--runs N] [--scenario default] [--keep]
     [--format pdf|html|both]
The test suite runs `--scenario bad-arrival --format html`: the campaign stops at G1.
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
    """Seconds per gate run, and G3's run split up (when the campaign reached G3)."""
    con = sqlite3.connect(db)
    try:
        out: dict[str, float] = {}
        g3: int | None = None
        for run_id, gate, started, finished in con.execute(
                "select id, gate, started_at, finished_at from run where gate is not null "
                "order by id"):
            out[f"{gate.lower()} run"] = (finished or started) - started
            if gate == "G3":
                g3 = run_id
        if g3 is None:
            return out
        for verb in ("start", "restart", "stop"):
            spans = con.execute(  # an arm's instances act at once: wall time, not a sum
                "select at - duration, at from event where run_id = ? and source = 'action' "
                "and name like ?", (g3, f"% {verb} %")).fetchall()
            out[f"g3 actions: {verb}"] = _union(spans)
        for phase in ("warm", "measured"):
            out[f"g3 phases: {phase}"] = con.execute(
                "select coalesce(sum(duration), 0) from benchmark where run_id = ? "
                "and phase = ?", (g3, phase)).fetchone()[0]
        out["g3 other (calibration, scrapes, decisions)"] = out["g3 run"] - sum(
            v for k, v in out.items() if k.startswith(("g3 actions", "g3 phases")))
        out["pairs"] = con.execute("select coalesce(sum(repetitions), 0) from cell "
                                   "where run_id = ?", (g3,)).fetchone()[0]
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


def one_demo(scenario: str, fmt: str, out: Path) -> tuple[float, int, dict[str, float]]:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness", "demo", "--out", str(out),
                           "--scenario", scenario, "--format", fmt],
                          capture_output=True, text=True)
    wall = time.monotonic() - t0
    sites = [p for p in out.iterdir() if p.is_dir()]
    if not sites:  # the demo stopped before writing its site: say why
        raise SystemExit(f"gate demo exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    parts = breakdown(sites[0] / "gate.db")
    parts["outside the gate runs (setup, report)"] = wall - sum(
        v for k, v in parts.items() if k.endswith(" run"))
    return wall, proc.returncode, parts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--scenario", default="default")
    ap.add_argument("--keep", action="store_true", help="keep the demo directories")
    ap.add_argument("--format", dest="fmt", choices=("pdf", "html", "both"), default="pdf",
                    help="the report's, as `gate demo --format` (html: no PDF to render)")
    args = ap.parse_args()
    walls: list[float] = []
    for i in range(args.runs):
        out = Path(tempfile.mkdtemp(prefix="gate-demo-bench-"))
        wall, code, parts = one_demo(args.scenario, args.fmt, out)
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
