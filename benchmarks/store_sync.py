"""`gate sync` of a G4-sized run from SQLite into PostgreSQL: seconds and rows/s.

Goal (issue 28 item 3): a G4 run (1 M request rows + 4 320 soak windows) syncs in <= 30 s.
Also timed: the same sync again (nothing to write: each side's content digest is read to
say so), and the same sync into a new SQLite file. Without --pg-url a throwaway cluster
is started as the tests start it (tests/pg_support: the Debian `postgresql` package, run
as the postgres user when root, fsync off) and removed afterwards.
Run: .venv/bin/python benchmarks/store_sync.py [--requests 1000000] [--windows 4320]
     [--pg-url URL]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store import windows as store_windows
from harness.store.sync import SyncResult, sync_stores

REPO = Path(__file__).resolve().parents[1]
GOAL = 30.0  # seconds for a G4-sized run


def fill(url: str, requests: int, windows: int) -> None:
    """One finished G4 run: `requests` request rows over two benchmarks, `windows` soak
    windows, as the soak stores them."""
    store = Store(url)
    try:
        rid = store_runs.start_gate_run(store, store_runs.NewRun(
            campaign="soak", site="bench", customer="", kind="gate", gate="G4"))
        chunks = np.linspace(0.1, 1.0, 16, dtype="<f4").tobytes()
        half = requests // 2
        for part, n in enumerate((half, requests - half)):
            bid = writer.start_benchmark(store, rid, arm="accelerated", tier=16,
                                         repetition=part, phase="soak")
            writer.insert_requests(store, bid, (
                {"idx": i, "instance": i % 2, "scheduled": i * 0.001, "sent": i * 0.001,
                 "ttft": 0.2, "ttft_text": 0.21, "e2el": 1.0, "prompt_tokens": 32000,
                 "output_tokens": 16, "status": 200, "chunks": chunks,
                 "finish_reason": "length"} for i in range(n)))
            writer.finish_benchmark(store, bid, status="FINISHED", duration=3600.0,
                                    summary={"requests": n})
        store_windows.upsert_windows(store, rid, [
            {"idx": k, "start_s": 60.0 * k, "length_s": 60.0, "requests": 230,
             "errors": {}, "ttft_p50_s": 0.2, "ttft_p99_s": 0.4, "tpot_p50_s": 0.02,
             "output_tokens": 3680, "counters": {"i0": {"hits": k}}}
            for k in range(windows)])
        store_runs.finish_run(store, rid, verdict="PASS", reason="")
    finally:
        store.close()


def timed_sync(src_url: str, dst_url: str) -> tuple[float, SyncResult]:
    src, dst = Store(src_url), Store(dst_url)
    try:
        t = time.perf_counter()
        result = sync_stores(src, dst)
        return time.perf_counter() - t, result
    finally:
        src.close()
        dst.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000, help="request rows of the run")
    ap.add_argument("--windows", type=int, default=4320, help="soak windows of the run")
    ap.add_argument("--pg-url", default=None,
                    help="an empty PostgreSQL database (default: a throwaway cluster)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from pg_support import database_url

    with database_url(args.pg_url) as pg_url, tempfile.TemporaryDirectory() as d:
        source = f"sqlite:///{d}/source.db"
        t = time.perf_counter()
        fill(source, args.requests, args.windows)
        print(f"fill: G4 run {args.requests} requests + {args.windows} windows in "
              f"{time.perf_counter() - t:.1f} s")
        took, first = timed_sync(source, pg_url)
        rows = sum(r.rows for r in first.runs)
        assert [r.action for r in first.runs] == ["added"], first.runs
        print(f"sync SQLite -> PostgreSQL: {rows} rows in {took:.1f} s "
              f"({rows / took:,.0f} rows/s); goal <= {GOAL:.0f} s for 1M requests "
              f"-> {took * 1_000_000 / max(args.requests, 1) / GOAL:.2f} of budget")
        again, second = timed_sync(source, pg_url)
        assert [r.action for r in second.runs] == ["skipped"], second.runs
        print(f"again, nothing to write (both digests read): {again:.1f} s")
        lite, third = timed_sync(source, f"sqlite:///{d}/target.db")
        assert [r.action for r in third.runs] == ["added"], third.runs
        print(f"sync SQLite -> SQLite: {rows} rows in {lite:.1f} s "
              f"({rows / lite:,.0f} rows/s)")


if __name__ == "__main__":
    main()
