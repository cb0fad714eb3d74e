"""doc-qa calibration speed against a simulated engine's /tokenize: the G3 workload of
64 documents of 32 000 tokens, one worker against the default pool.

Goal: the default is >= 3x faster than calibrating one document at a time as before
(3.1 s for 16 documents, 4.4 /tokenize calls each, a new TCP connection per call), with
the same prompts. The prompts of every trial are compared: a difference is an error.

Run: .venv/bin/python benchmarks/calibrate.py [--docs 64] [--doc-tokens 32000] [--trials 3]
Trials alternate workers=1 / default so drift on a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import harness.loadgen.workloads as workloads
from harness.loadgen.tokenizer import ServerTokenizer
from harness.sim.control import engine_url, start_engine, stop_engine
from harness.sim.spec import EngineSpec

MODEL = "Qwen/Qwen2.5-32B-Instruct"
DEFAULT_WORKERS = int(inspect.signature(workloads.doc_qa).parameters["workers"].default)


@contextlib.contextmanager
def counted() -> Iterator[list[ServerTokenizer]]:
    """Every tokenizer doc_qa makes inside the block, for its calls and connections."""
    made: list[ServerTokenizer] = []

    class Counted(ServerTokenizer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:  # whatever doc_qa passes
            super().__init__(*args, **kwargs)
            made.append(self)

    with mock.patch.object(workloads, "ServerTokenizer", Counted):
        yield made


def trial(url: str, docs: int, doc_tokens: int, workers: int,
          seed: int) -> tuple[float, float, int, list[str]]:
    """(seconds, calls per document, connections, prompts)."""
    with counted() as made:
        t = time.perf_counter()
        wl = workloads.doc_qa(docs, doc_tokens, 64, seed, tokenize_url=url, model=MODEL,
                              workers=workers)
        wall = time.perf_counter() - t
    if not wl.exact:
        raise SystemExit(f"not exact: {wl.notes}")
    return wall, made[0].calls / docs, made[0].connections, [s.prompt for s in wl.specs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=64)
    ap.add_argument("--doc-tokens", type=int, default=32000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--profile", default="r1-qwen32b")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        state = Path(d) / "sim"
        start_engine(EngineSpec(profile=args.profile, port=0, speed=30.0), state)
        try:
            url = engine_url(state)
            times: dict[int, list[float]] = {1: [], DEFAULT_WORKERS: []}
            print(f"{args.docs} documents x {args.doc_tokens} tokens (+64), {args.profile}")
            print("trial  workers  seconds  calls/doc  connections")
            for n in range(args.trials):
                prompts: list[list[str]] = []
                for workers in times:
                    wall, per_doc, conns, p = trial(url, args.docs, args.doc_tokens, workers,
                                                    seed=1000 + n)
                    times[workers].append(wall)
                    prompts.append(p)
                    print(f"{n:5}  {workers:7}  {wall:7.2f}  {per_doc:9.2f}  {conns:11}",
                          flush=True)
                if prompts[0] != prompts[1]:
                    raise SystemExit(f"trial {n}: the prompts depend on the workers")
        finally:
            stop_engine(state)
    one, pool = statistics.median(times[1]), statistics.median(times[DEFAULT_WORKERS])
    print(f"median: workers=1 {one:.2f} s, workers={DEFAULT_WORKERS} {pool:.2f} s, "
          f"ratio {one / pool:.2f}x")


if __name__ == "__main__":
    main()
