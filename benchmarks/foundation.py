"""Foundation speed: `gate --help` start-up and 1 000 000 request rows into SQLite.

Goals (issue 3): `gate --help` <= 0.3 s; 1M request rows <= 10 s with Core bulk inserts.
Run: .venv/bin/python benchmarks/foundation.py [--rows 1000000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.store import Store, writer
from harness.store import runs as store_runs


def help_time(repeat: int = 7) -> float:
    gate = Path(sys.executable).parent / "gate"
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([str(gate), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def insert_time(n: int = 1_000_000) -> float:
    with tempfile.TemporaryDirectory() as d:
        store = Store(f"sqlite:///{d}/bench.db")
        run_id = store_runs.start_run(store, store_runs.NewRun(
            campaign="bench", site="bench", customer="", kind="bench"))
        bench = writer.start_benchmark(store, run_id, arm="accelerated", tier=16)
        chunks = np.linspace(0.1, 1.0, 16, dtype="<f4").tobytes()
        rows = ({"idx": i, "instance": i % 2, "scheduled": i * 0.001, "sent": i * 0.001,
                 "ttft": 0.2, "ttft_text": 0.21, "e2el": 1.0, "prompt_tokens": 32000,
                 "output_tokens": 16, "status": 200, "chunks": chunks} for i in range(n))
        t = time.perf_counter()
        writer.insert_requests(store, bench, rows, batch=20000)
        return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="request rows to insert")
    ap.add_argument("--repeat", type=int, default=7, help="`gate --help` runs (median)")
    args = ap.parse_args()
    h = help_time(args.repeat)
    print(f"gate --help            median {h * 1000:7.1f} ms   goal <= 300 ms   "
          f"ratio {h / 0.3:.2f}")
    i = insert_time(args.rows)
    per_million = i / args.rows * 1_000_000  # the goal's size, scaled linearly
    print(f"{args.rows} request rows insert  {i:7.2f} s    goal <= 10 s per 1M   "
          f"ratio {per_million / 10:.2f}")


if __name__ == "__main__":
    main()
