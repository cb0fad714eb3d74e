"""Request rows into PostgreSQL (COPY) against SQLite (executemany): rows/s and the ratio.

Goal (issue 28 item 2): PostgreSQL in SQLite's speed class; the issue's full goal is 1 M
rows <= 15 s. Without --pg-url a throwaway cluster is started as the tests start it
(tests/pg_support: the Debian `postgresql` package, run as the postgres user when root,
fsync off) and removed afterwards.
Run: .venv/bin/python benchmarks/store_pg.py [--rows 100000] [--repeat 3] [--pg-url URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.store import Store, writer
from harness.store import runs as store_runs

REPO = Path(__file__).resolve().parents[1]


def insert_rate(url: str, n: int) -> float:
    """Rows per second of one insert_requests call of `n` rows into a new benchmark."""
    store = Store(url)
    try:
        run_id = store_runs.start_run(store, store_runs.NewRun(
            campaign="bench", site="bench", customer="", kind="bench"))
        bench = writer.start_benchmark(store, run_id, arm="accelerated", tier=16)
        chunks = np.linspace(0.1, 1.0, 16, dtype="<f4").tobytes()
        rows = [{"idx": i, "instance": i % 2, "scheduled": i * 0.001, "sent": i * 0.001,
                 "ttft": 0.2, "ttft_text": 0.21, "e2el": 1.0, "prompt_tokens": 32000,
                 "output_tokens": 16, "status": 200, "chunks": chunks,
                 "finish_reason": "length"} for i in range(n)]
        t = time.perf_counter()
        stored = writer.insert_requests(store, bench, rows, batch=20000)
        took = time.perf_counter() - t
        assert stored == n and len(writer.stored_idx(store, bench)) == n
        return n / took
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000, help="request rows per insert")
    ap.add_argument("--repeat", type=int, default=3, help="inserts per store (median)")
    ap.add_argument("--pg-url", default=None,
                    help="an empty PostgreSQL database (default: a throwaway cluster)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from pg_support import database_url

    with database_url(args.pg_url) as pg_url:
        with tempfile.TemporaryDirectory() as d:
            lite = statistics.median(insert_rate(f"sqlite:///{d}/bench.db", args.rows)
                                     for _ in range(args.repeat))
        pg = statistics.median(insert_rate(pg_url, args.rows) for _ in range(args.repeat))
    print(f"{args.rows} request rows  sqlite      {lite:10.0f} rows/s")
    print(f"{args.rows} request rows  postgresql  {pg:10.0f} rows/s   "
          f"1M in {1_000_000 / pg:5.1f} s   goal <= 15 s")
    print(f"postgresql / sqlite  ratio {pg / lite:.2f}")


if __name__ == "__main__":
    main()
