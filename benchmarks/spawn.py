"""Engine start / cold restart / stop, with and without the pre-imported spawner
(harness.sim.spawner): what `gate demo` pays ~150 times a run.

Two ways of asking: `api` calls harness.sim.control in this process (the tests, a demo
that calls it directly); `cli` runs `python -m harness.sim.control ...` as the demo's site
config does, so each action also pays that interpreter's own start (~0.16 s of imports).

Goal (issue: demo in 3 minutes): a start or restart through the spawner well under 0.1 s
in `api`, >= 4x faster than a new interpreter.

Run: .venv/bin/python benchmarks/spawn.py [--cycles 10] [--ways api,cli]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness.sim.control import restart_engine, start_engine, stop_engine
from harness.sim.spawn_client import start_spawner, stop_spawner
from harness.sim.spec import EngineSpec

CONTROL = [sys.executable, "-m", "harness.sim.control"]
# the demo's engine options (harness/demo.py), on a free port
SPEC = EngineSpec(port=0, tp=8, speed=30.0, seed=7, stream_interval=8)


def _timed(action: Callable[[], object]) -> float:
    t = time.perf_counter()
    action()
    return time.perf_counter() - t


def _cli(*args: str) -> None:
    subprocess.run([*CONTROL, *args], check=True, capture_output=True, timeout=60)


def cycles(way: str, state: Path, spawner: Path | None, n: int) -> dict[str, list[float]]:
    """n x (start, restart, stop) of one engine; seconds per action."""
    out: dict[str, list[float]] = {"start": [], "restart": [], "stop": []}
    start_args = ["start", "--state-dir", str(state), "--port", "0", "--tp", "8", "--speed",
                  "30", "--seed", "7", "--stream-interval", "8"]
    if spawner is not None:
        start_args += ["--spawner", str(spawner)]
    for _ in range(n):
        if way == "api":
            out["start"].append(_timed(lambda: start_engine(SPEC, state, spawner=spawner)))
            out["restart"].append(_timed(lambda: restart_engine(state)))
            out["stop"].append(_timed(lambda: stop_engine(state)))
        else:
            out["start"].append(_timed(lambda: _cli(*start_args)))
            out["restart"].append(_timed(lambda: _cli("restart", "--state-dir", str(state))))
            out["stop"].append(_timed(lambda: _cli("stop", "--state-dir", str(state))))
    return out


def _sd(xs: list[float]) -> str:
    """The spread of a figure; "  -  " for one cycle (the tests' tiny run), which has none."""
    return f"{statistics.stdev(xs):.3f}" if len(xs) > 1 else "  -  "


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=10, help="start/restart/stop cycles each")
    ap.add_argument("--ways", default="api,cli", help="api, cli or both")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="spawnbench", dir="/tmp") as d:
        tmp = Path(d)
        sock = tmp / "s.sock"
        t = time.perf_counter()
        start_spawner(sock, tmp / "spawner.log")
        print(f"spawner start-up (imports, then answers): {time.perf_counter() - t:.3f} s")
        try:
            print(f"mean seconds over {args.cycles} cycles (sd)")
            print("way  action    new interpreter     spawner        ratio")
            for way in args.ways.split(","):
                plain = cycles(way, tmp / f"{way}-plain", None, args.cycles)
                forked = cycles(way, tmp / f"{way}-fork", sock, args.cycles)
                for action in ("start", "restart", "stop"):
                    a, b = plain[action], forked[action]
                    ma, mb = statistics.mean(a), statistics.mean(b)
                    print(f"{way:4} {action:8} {ma:7.3f} ({_sd(a)})   "
                          f"{mb:7.3f} ({_sd(b)})   {ma / mb:5.1f}x", flush=True)
        finally:
            stop_spawner(sock)


if __name__ == "__main__":
    main()
