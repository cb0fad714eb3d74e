"""Simulator speed and fidelity over real HTTP: start-up, streamed req/s, and whether the
modelled G3 ratios (TTFT p50 drop, throughput gain) survive the speed factor.

Goals (issue 6): >= 500 streamed short completions/s with the engine model on; start-up
to healthy well under 1 s; at the demo's speed the r1 drop and gain stay near the
profile's (0.75 / 0.355; gain inside 0.29..0.40).

Run: .venv/bin/python benchmarks/sim.py [--quick] [--speeds 1,20,30,50]
     [--starts 5] [--requests 4000] [--tiers 4,8,16] [--layouts TP8,TP4x2] [--doc-tokens N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sim_support import closed_loop, stream

from harness.sim.control import engine_url, restart_engine, start_engine, stop_engine
from harness.sim.spec import EngineSpec

SHORT = "the kv cache was read from the tier"  # 13 tokens
_THREE = "the of and to in is was for on are as at be by had not but or an one you all"
THREE = tuple(_THREE.split())


def doc(n_tokens: int, seed: int) -> str:
    """n_tokens exactly: words of <= 3 letters are one token each with their space."""
    import random

    rng = random.Random(seed)
    return "".join(" " + rng.choice(THREE) for _ in range(n_tokens))


def startup(tmp: Path, repeat: int = 5) -> float:
    times = []
    for i in range(repeat):
        d = tmp / f"start{i}"
        t = time.perf_counter()
        start_engine(EngineSpec(port=0), d, timeout=30)
        times.append(time.perf_counter() - t)
        stop_engine(d)
    return statistics.median(times)


async def _hammer(url: str, n: int, concurrency: int, max_tokens: int) -> tuple[float, int, int]:
    conn = aiohttp.TCPConnector(limit=0)
    chunks = 0
    failed = 0
    left = n
    async with aiohttp.ClientSession(connector=conn) as session:
        async def client() -> None:
            nonlocal left, chunks, failed
            while left > 0:
                left -= 1
                r = await stream(session, url, {"prompt": SHORT, "max_tokens": max_tokens})
                chunks += len(r.chunks)
                failed += r.error is not None or not r.done
        await client_warmup(session, url)
        t = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        wall = time.perf_counter() - t
    return n / wall, chunks, failed


async def client_warmup(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(20):
        await stream(session, url, {"prompt": SHORT, "max_tokens": 4})


def req_per_s(tmp: Path, n: int, speed: float) -> tuple[float, float, int]:
    """Short streamed completions (16 tokens): at speed 1e6 the model takes no time and
    tokens due together share a chunk; at speed 250 (r1 TP8, c=64: ~1.1 ms per token)
    every token is its own chunk, as in a real stream."""
    spec = EngineSpec(port=0, speed=speed, tp=8)
    d = tmp / "rps"
    start_engine(spec, d)
    try:
        rate, chunks, failed = asyncio.run(_hammer(engine_url(d), n, 64, 16))
    finally:
        stop_engine(d)
    return rate, chunks / n, failed


def cell(tmp: Path, profile: str, speed: float, tp: int, instances: int, c: int,
         tokens: int = 32064, max_tokens: int = 128) -> tuple[float, float, float]:
    """One G3 cell, both arms: warm, cold restart, measured. Returns drop, gain, seconds."""
    prompts = [doc(tokens, 1000 * c + i) for i in range(4 * c)]
    t0 = time.perf_counter()
    out = {}
    for arm, tier in (("base", False), ("acc", True)):
        dirs = [tmp / f"{arm}-{profile}-{speed}-{tp}x{instances}-{c}-{k}"
                for k in range(instances)]
        tier_dir = tmp / f"tier-{profile}-{speed}-{tp}x{instances}-{c}"
        for k, d in enumerate(dirs):
            start_engine(EngineSpec(profile=profile, port=0, speed=speed, tp=tp, instance=k,
                                    external_tier=tier, tier_dir=tier_dir if tier else None,
                                    cache_dir=tmp / "cache", stream_interval=8), d)
        try:
            urls = [engine_url(d) for d in dirs]
            asyncio.run(closed_loop(urls, prompts, c, max_tokens))  # warm
            time.sleep(0.2)  # the last write-behind lands
            for d in dirs:
                restart_engine(d)
            urls = [engine_url(d) for d in dirs]
            out[arm] = asyncio.run(closed_loop(urls, prompts, c, max_tokens))
        finally:
            for d in dirs:
                stop_engine(d)
    drop = 1 - out["acc"].ttft_p50 / out["base"].ttft_p50
    gain = out["acc"].throughput / out["base"].throughput - 1
    return drop, gain, time.perf_counter() - t0


LAYOUTS = {"TP8": (8, 1), "TP4x2": (4, 2)}  # label -> (tp, instances)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer requests and cells")
    ap.add_argument("--speeds", default="1,20,30,50")
    ap.add_argument("--profile", default="r1-qwen32b")
    # the sizes below default to the real run's; the test suite runs tiny ones
    ap.add_argument("--starts", type=int, default=5, help="start-ups timed (median)")
    ap.add_argument("--requests", type=int, default=0,
                    help="short completions per speed (default 4000, --quick 1000)")
    ap.add_argument("--tiers", default="",
                    help="concurrencies of the cells (default 4,8,16; 4 at speed < 5 or "
                         "--quick)")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="of " + ", ".join(LAYOUTS))
    ap.add_argument("--doc-tokens", type=int, default=32064, help="a cell's prompt length")
    args = ap.parse_args()
    requests = args.requests or (1000 if args.quick else 4000)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"start-up to healthy (median of {args.starts}): "
              f"{startup(tmp, args.starts):.3f} s")
        for speed in (1e6, 250.0):
            rate, cpr, failed = req_per_s(tmp, requests, speed=speed)
            print(f"short streamed completions, c=64, 16 tokens, speed {speed:g}: "
                  f"{rate:.0f} req/s ({cpr:.1f} SSE events per request, {failed} failed)")
        print(f"G3 cells ({args.profile}, {args.doc_tokens} prompt tokens; "
              "model target drop 0.75, gain 0.355):")
        print("speed  layout  c   drop   gain   wall")
        for speed in (float(s) for s in args.speeds.split(",")):
            for label in args.layouts.split(","):
                tp, inst = LAYOUTS[label]
                cs = tuple(int(c) for c in args.tiers.split(",")) if args.tiers \
                    else (4,) if speed < 5 or args.quick else (4, 8, 16)
                if speed < 5 and label != "TP8":
                    continue
                for c in cs:
                    drop, gain, wall = cell(tmp, args.profile, speed, tp, inst, c,
                                            tokens=args.doc_tokens)
                    print(f"{speed:5g}  {label:6} {c:3} {drop:6.3f} {gain:6.3f} {wall:6.1f}s",
                          flush=True)


if __name__ == "__main__":
    main()
