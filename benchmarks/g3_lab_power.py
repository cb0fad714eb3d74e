"""Power of the whole G3 on the simulated lab, every rule on: how many seeded one-cell
runs of the honest default profile PASS, and what a G3 cell costs in wall time.

Why: benchmarks/g3_validity.py measures the decision statistics on synthetic cells and
never meets the evidence rules (devices, two clocks, engine identity, the agent's
digest ...). A rule that misfires on honest engines costs power silently; this runs the
real suite end to end on the one-cell site of the integration tests (TP8, tier 4, 3 to
`--max-pairs` pairs, speed 30) with a different seed per run (ABBA order, documents,
bootstrap), and says how many PASS and why the others did not.

`--code DIR` runs another checkout's harness (e.g. a `git worktree` of main before a
change) on the same sites, so the time a change adds to a cell is measured, not guessed.

Run: .venv/bin/python benchmarks/g3_lab_power.py [--runs 10] [--max-pairs 8] [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def one_run(seed: int, max_pairs: int, code: Path | None) -> dict[str, object]:
    from g3_site import one_cell_site

    with tempfile.TemporaryDirectory() as d, one_cell_site(Path(d)) as site:
        env = site.env(**({"PYTHONPATH": str(code)} if code else {}))
        t0 = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "harness", "run", "G3", "--force",
             "--set", f"gates.g3.seed={seed}", "--set", f"workload.seed={seed}",
             "--set", f"gates.g3.repetitions.max={max_pairs}"],
            cwd=site.root, env=env, capture_output=True, text=True, timeout=1800)
        wall = time.monotonic() - t0
        with sqlite3.connect(site.root / "gate.db") as con:
            verdict = con.execute("SELECT verdict FROM run").fetchone()[0]
            cell = con.execute("SELECT name, outcome, message FROM \"check\" "
                               "WHERE name = 'test_cell'").fetchone()
            pairs = con.execute("SELECT coalesce(max(repetitions), 0) FROM cell").fetchone()[0]
        return {"seed": seed, "rc": out.returncode, "verdict": verdict, "wall_s": wall,
                "pairs": pairs, "cell": cell[1] if cell else None,
                "why": (cell[2] or "")[:160] if cell else out.stderr[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-pairs", type=int, default=8)
    ap.add_argument("--seed", type=int, default=20261204, help="seed of the first run")
    ap.add_argument("--code", type=Path, default=None,
                    help="another checkout whose harness runs (PYTHONPATH)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    runs = []
    for i in range(a.runs):
        r = one_run(a.seed + i, a.max_pairs, a.code)
        runs.append(r)
        print(f"run {i + 1}/{a.runs}: seed {r['seed']} {r['verdict']} in {r['wall_s']:.0f} s, "
              f"{r['pairs']} pairs {r['why'] if r['verdict'] != 'PASS' else ''}",
              file=sys.stderr, flush=True)
    passed = sum(1 for r in runs if r["verdict"] == "PASS")
    per_pair = [float(str(r["wall_s"])) / int(str(r["pairs"])) for r in runs
                if int(str(r["pairs"])) > 0]
    summary = {"runs": len(runs), "pass": passed, "power": passed / len(runs),
               "wall_s_median": statistics.median(float(str(r["wall_s"])) for r in runs),
               "s_per_pair_median": statistics.median(per_pair) if per_pair else None,
               "load_average": os.getloadavg()[0], "code": str(a.code or ROOT)}
    if a.json:
        print(json.dumps({"summary": summary, "runs": runs}, indent=2))
    else:
        print(f"G3 one-cell lab power: {passed} of {len(runs)} PASS "
              f"({summary['power']:.0%}); median {summary['wall_s_median']:.0f} s a run, "
              f"{summary['s_per_pair_median']} s a pair; load average "
              f"{summary['load_average']:.1f}")
        for r in runs:
            if r["verdict"] != "PASS":
                print(f"  seed {r['seed']}: {r['verdict']}: {r['why']}")


if __name__ == "__main__":
    main()
