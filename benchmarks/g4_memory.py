"""Memory over a G4 soak: the gate process (the soak's viewer) and the detached soak
process, sampled from /proc while a real `gate run G4` soaks the simulated one-cell site.

Goal (issue 26): the gate process's RSS flat over a 10-minute soak, start vs end. "Start"
is the first sample after the soak wrote its first window (the viewer has attached, the
soak has its loop and first requests: start-up allocations are done); "end" the last
sample before the soak finished. The soak process is shown beside it: it keeps no request
longer than its window, so it should be flat too.

Run: .venv/bin/python benchmarks/g4_memory.py [--minutes 10] [--window 10] [--every 15]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def rss_mb(pid: int) -> float | None:
    """The process's resident set (MB, 1e6 B), None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        return None
    return None


def soak_state(root: Path) -> dict[str, object]:
    found = sorted(root.glob("artifacts/run-*/g4-soak/state.json"))
    try:
        return dict(json.loads(found[-1].read_text())) if found else {}
    except (OSError, ValueError):  # being replaced right now
        return {}


def growth(first: float, last: float) -> str:
    return f"{(last / first - 1) * 100:+.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="the soak's duration")
    ap.add_argument("--window", type=float, default=10.0, help="seconds per window")
    ap.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    ap.add_argument("--concurrency", type=int, default=4)
    opts = ap.parse_args()
    from g3_site import one_cell_site
    from gate_testing import GATE

    duration = opts.minutes * 60
    soak = {"duration": f"{duration:g}s", "window": f"{opts.window:g}s",
            "baseline": f"{max(opts.window * 3, duration / 10):g}s",
            "concurrency": opts.concurrency}
    print(f"soak {opts.minutes:g} min in windows of {opts.window:g} s at c={opts.concurrency}, "
          f"sampled every {opts.every:g} s")
    print(f"{'t (s)':>7} {'windows':>7} {'gate MB':>8} {'soak MB':>8}")
    with tempfile.TemporaryDirectory() as d, one_cell_site(Path(d)) as site:
        site.edit({"gates": {"g4": soak}})
        gate = subprocess.Popen([*GATE, "run", "G4", "--force"], cwd=site.root,
                                env=site.env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        rows: list[tuple[float, int, float, float]] = []
        while gate.poll() is None:
            state = soak_state(site.root)
            windows = int(str(state.get("windows_written", 0)))
            pid = state.get("pid")
            mine = rss_mb(gate.pid)
            theirs = rss_mb(int(str(pid))) if pid else None
            if windows >= 1 and mine is not None and theirs is not None \
                    and state.get("status") == "running":
                rows.append((time.monotonic() - t0, windows, mine, theirs))
                print(f"{rows[-1][0]:>7.0f} {windows:>7} {mine:>8.1f} {theirs:>8.1f}",
                      flush=True)
            time.sleep(opts.every if rows else 0.2)
        code = gate.wait()
    if len(rows) < 2:
        raise SystemExit(f"fewer than two samples while the soak ran (gate exit {code})")
    first, last = rows[0], rows[-1]
    print(f"gate process RSS: start {first[2]:.1f} MB, end {last[2]:.1f} MB "
          f"({growth(first[2], last[2])}), max {max(r[2] for r in rows):.1f} MB")
    print(f"soak process RSS: start {first[3]:.1f} MB, end {last[3]:.1f} MB "
          f"({growth(first[3], last[3])}), max {max(r[3] for r in rows):.1f} MB")
    print(f"samples {len(rows)} over {last[0] - first[0]:.0f} s; gate run G4 exit {code}")


if __name__ == "__main__":
    main()
