"""G4's viewer at a 72 h soak's size: pull 4 320 window files from a spool into the store,
attribute the devices' reads (4 samples a window from 2 hosts: ~35 000 samples) and judge
every criterion; then the same pull again (a resumed viewer: nothing new is stored).

Goal (issue 26): a 72 h soak's windows pull, store and judge in well under 10 s (the report
is benchmarks/report.py's). The windows are read back the way the viewer reads them
(harness/g4/stored.py: the devices' reads and the engines' own counters, 5 series sampled
4 times a window, attributed to each). Prints each step's seconds and the windows per
second.

Run: .venv/bin/python benchmarks/g4_soak.py [--windows 4320] [--hosts 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from harness.g4.criteria import Criteria, judge
from harness.g4.engine_clock import GENERATED, HITS, REQUESTS, TTFT_COUNT, TTFT_SUM
from harness.g4.spool import SoakSpec, SoakState, Spool, window_row
from harness.g4.stored import STORAGE
from harness.g4.stored import windows as stored_windows
from harness.loadgen.records import Endpoint, RequestSpec
from harness.store.db import Store
from harness.store.runs import NewRun, start_run
from harness.store.windows import last_index, upsert_windows
from harness.store.writer import insert_series

KV = 262144.0  # bytes of KV per token (Qwen2.5-32B, bf16)


def write_spool(root: Path, n: int, window_s: float) -> Spool:
    spool = Spool(root)
    spool.create(SoakSpec(endpoints=(Endpoint("http://h:1", "m", 0),),
                          documents=(RequestSpec("d", 8, 0, 100),), concurrency=16,
                          duration_s=n * window_s, window_s=window_s))
    rng = np.random.default_rng(26)
    for k in range(n):
        spool.write_window(k, {
            "index": k, "start_s": k * window_s, "length_s": window_s, "requests": 240,
            "errors": {}, "ttft_p50_s": float(9.3 + rng.normal(0, 0.3)),
            "ttft_p99_s": 14.0, "tpot_p50_s": 0.05, "output_tokens": 30720,
            "external_hit_tokens": 3.0e6, "engine_rss_bytes": 4.0e10, "engine_restarts": 0,
            "engines": [{"instance": 0, "sampled": True}],
            "clock": {"first_tokens": 240, "ttft_sum_s": 240 * 9.5, "completed": 240,
                      "ended": 240}})
    spool.set_state(SoakState("done", 1, 1_000_000.0, 1_000_000.0 + n * window_s,
                              windows_written=n))
    return spool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--windows", type=int, default=4320)
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--hosts", type=int, default=2)
    args = ap.parse_args()
    n, w = args.windows, args.window_s
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        spool = write_spool(Path(d) / "soak", n, w)
        print(f"spool: {n} window files written in {time.perf_counter() - t:.2f} s")
        store = Store(f"sqlite:///{d}/g.db")
        run = start_run(store, NewRun(campaign="b", site="b", customer="", kind="gate",
                                      gate="G4"))
        state = spool.state()
        assert state is not None
        samples: list[dict[str, Any]] = []
        per_quarter = {TTFT_SUM: 60 * 9.3, TTFT_COUNT: 60, REQUESTS: 60, GENERATED: 7680,
                       HITS: 7.5e5}
        for i in range(4 * n + 1):
            at = state.started_at + i * w / 4
            for h in range(args.hosts):
                samples.append({"source": f"st{h}", "metric": STORAGE,
                                "labels": {}, "at": at, "value": i * 2.0e11})
            samples.extend({"source": "http://h:1", "metric": metric, "labels": {},
                            "at": at, "value": i * rise} for metric, rise in per_quarter.items())
        t = time.perf_counter()
        insert_series(store, run, samples)
        t_samples = time.perf_counter() - t

        def pull() -> int:
            last = last_index(store, run)
            rows = [window_row(spool.read_window(k)) for k in spool.window_indices()
                    if last is None or k > last]
            if rows:
                upsert_windows(store, run, rows)
            return len(rows)

        t = time.perf_counter()
        stored = pull()
        t_pull = time.perf_counter() - t
        t = time.perf_counter()
        again = pull()
        t_again = time.perf_counter() - t
        t = time.perf_counter()
        wins = stored_windows(store, run, state.started_at, w, storage=True,
                              kv_volume=False, poll_s=w / 4)
        assert all(x.evidence.engine_clock is not None for x in wins)
        judged = judge(wins, Criteria(duration_h=n * w / 3600), KV, client_placement=True)
        t_judge = time.perf_counter() - t
        store.close()
    print(f"device and engine samples: {len(samples):,} stored in {t_samples:.2f} s")
    print(f"pull: {stored} windows stored in {t_pull:.2f} s ({stored / t_pull:,.0f} windows/s); "
          f"pulled again: {again} new in {t_again:.2f} s")
    print(f"judge: {len(wins)} windows read back, reads and engine counters attributed, "
          f"{len(judged)} criteria in {t_judge:.2f} s")
    total = t_pull + t_judge
    print(f"total pull + judge {total:.2f} s   goal <= 10 s "
          f"({', '.join(f'{j.criterion} {j.verdict.value}' for j in judged)})")


if __name__ == "__main__":
    main()
