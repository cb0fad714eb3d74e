"""Event-loop stalls during a load phase, with and without heap_frozen (harness/loadgen).

Why: a full garbage collection of the gate process's heap (ansible, pandas, SQLAlchemy,
pytest loaded: ~150k objects) stops the event loop for ~90 ms; inside a measured phase
that lands in TTFTs and in the wall time. The figure is the worst loop lateness seen by
a 1 ms ticker during each phase, over several phases, each way.

Run: .venv/bin/python benchmarks/gc_pause.py [--phases 20] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import harness.loadgen.engine as engine_mod
from harness.loadgen import Endpoint
from harness.loadgen.records import RequestSpec
from harness.sim.control import engine_url, start_engine, stop_engine
from harness.sim.spec import EngineSpec

MODEL = "Qwen/Qwen2.5-32B-Instruct"


def load_the_harness_heap() -> int:
    """What a `gate run G3` process holds before its phases."""
    import ansible.inventory.manager  # noqa: F401
    import ansible_runner  # noqa: F401
    import pandas  # noqa: F401
    import pytest  # noqa: F401
    import sqlalchemy  # noqa: F401

    import harness.g3.session
    import harness.runner
    import harness.stats  # noqa: F401
    return len(gc.get_objects())


async def _phase_with_ticker(url: str, n: int, lags: list[float]) -> None:
    stop = asyncio.Event()

    async def tick() -> None:
        worst = 0.0
        while not stop.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - t - 0.001)
        lags.append(worst)

    ticker = asyncio.create_task(tick())
    specs = [RequestSpec(prompt=f"request {i} " + "the kv cache " * 20, max_tokens=16, doc_id=i)
             for i in range(n)]
    await engine_mod.run_phase_async([Endpoint(url, MODEL)], specs, concurrency=8,
                                     progress=False)
    stop.set()
    await ticker


@contextlib.contextmanager
def _not_frozen() -> Iterator[None]:
    yield


def measure(url: str, phases: int, n: int, frozen: bool) -> list[float]:
    lags: list[float] = []
    patch = (contextlib.nullcontext() if frozen
             else mock.patch.object(engine_mod, "heap_frozen", _not_frozen))
    garbage: list[object] = []
    with patch:
        for _ in range(phases):
            for _ in range(20000):  # cyclic garbage, as a G3 session makes between phases
                a: list[object] = []
                a.append(a)
                garbage.append(a)
            garbage.clear()
            asyncio.run(_phase_with_ticker(url, n, lags))
    return lags


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", type=int, default=20)
    ap.add_argument("--requests", type=int, default=200)
    args = ap.parse_args()
    objects = load_the_harness_heap()
    print(f"heap: {objects} tracked objects")
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "engine"
        start_engine(EngineSpec(port=0, speed=50.0), state)
        try:
            url = engine_url(state)
            results = {}
            for frozen in (False, True, False, True):
                results.setdefault(frozen, []).extend(
                    measure(url, args.phases // 2, args.requests, frozen))
        finally:
            stop_engine(state)
    for frozen, lags in results.items():
        ms = sorted(1000 * x for x in lags)
        print(f"{'heap_frozen' if frozen else 'no freeze  '}: worst loop stall per phase "
              f"median {statistics.median(ms):5.1f} ms, max {ms[-1]:6.1f} ms, "
              f"phases with a stall > 50 ms: {sum(x > 50 for x in ms)} of {len(ms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
