"""Calibration: run the G3 cold-recovery workload against the engine model in virtual
time, so a profile's TTFT and throughput ratios come out exact and instantly (no HTTP, no
wall clock). `python -m harness.sim.calibrate [--profile P]` prints the table docs/sim.md
quotes; the unit tests hold the profiles to their targets with it.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import selectors
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.sim.engine import Engine, Rates, Trace
from harness.sim.profiles import PROFILES, get_profile
from harness.sim.prompt import Prompt, PromptDigests
from harness.sim.tier import MemoryTierIndex, TierIndex
from harness.sim.tokenizer import N_BYTES, vocab_size

T = TypeVar("T")


class _VirtualSelector(selectors.DefaultSelector):
    """Never sleeps: a select() that would block advances the virtual clock instead."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready:
            return ready
        if timeout is None:
            raise RuntimeError("virtual loop deadlock: nothing scheduled and nothing ready")
        self.clock += max(0.0, timeout)
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._vsel = _VirtualSelector()
        super().__init__(self._vsel)

    def time(self) -> float:
        return self._vsel.clock


def run_virtual(main: Callable[[], Awaitable[T]]) -> T:
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


@dataclass(frozen=True)
class PhaseResult:
    ttft_p50: float
    throughput: float  # output tokens / wall time of the phase
    wall: float
    requests: int


def make_docs(n: int, tokens: int, seed: int, salt: str = "calibrate") -> list[Prompt]:
    rng = random.Random(seed)
    hi = vocab_size() - 1
    digests = PromptDigests(16, salt)
    return [digests.of_ids([rng.randint(N_BYTES, hi) for _ in range(tokens)])
            for _ in range(n)]


async def run_phase(engines: list[Engine], docs: list[Prompt], concurrency: int,
                    max_tokens: int) -> PhaseResult:
    """Closed loop: `concurrency` clients, every doc once, spread round-robin over engines."""
    loop = asyncio.get_running_loop()
    queue = list(enumerate(docs))
    queue.reverse()
    ttfts: list[float] = []
    out_tokens = 0
    t0 = loop.time()

    async def client() -> None:
        nonlocal out_tokens
        while queue:
            i, doc = queue.pop()
            trace = Trace()
            sent = loop.time()
            first = None
            async for _ in engines[i % len(engines)].generate(doc, max_tokens, trace):
                if first is None:
                    first = loop.time() - sent
            assert first is not None
            ttfts.append(first)
            out_tokens += trace.output_tokens

    await asyncio.gather(*(client() for _ in range(concurrency)))
    wall = loop.time() - t0
    return PhaseResult(statistics.median(ttfts), out_tokens / wall, wall, len(docs))


@dataclass(frozen=True)
class CellResult:
    base: PhaseResult
    acc: PhaseResult

    @property
    def drop(self) -> float:
        return 1.0 - self.acc.ttft_p50 / self.base.ttft_p50

    @property
    def gain(self) -> float:
        return self.acc.throughput / self.base.throughput - 1.0


async def _engines(profile_name: str, tp: int, instances: int, tier: TierIndex | None,
                   seed: int) -> list[Engine]:
    p = get_profile(profile_name)
    out = []
    for k in range(instances):
        e = Engine(Rates.of(p, tp), tier=tier, speed=1.0, seed=seed * 1000 + k,
                   salt=f"{p.model}|tp{tp}")
        await e.start()
        out.append(e)
    return out


async def run_cell(profile_name: str, *, tp: int, instances: int, concurrency: int,
                   doc_tokens: int = 32064, max_tokens: int = 128, seed: int = 1) -> CellResult:
    """Baseline (tier off) and accelerated (warm, cold restart, measured) for one cell."""
    docs = make_docs(4 * concurrency, doc_tokens, seed)
    base_engines = await _engines(profile_name, tp, instances, None, seed)
    await run_phase(base_engines, docs, concurrency, max_tokens)  # warm
    base_engines = await _engines(profile_name, tp, instances, None, seed)  # restart
    base = await run_phase(base_engines, docs, concurrency, max_tokens)
    tier = MemoryTierIndex(get_profile(profile_name).tier_capacity_tokens)
    acc_engines = await _engines(profile_name, tp, instances, tier, seed)
    await run_phase(acc_engines, docs, concurrency, max_tokens)  # warm: fills the tier
    await asyncio.sleep(60.0)  # let the write-behind finish before the restart
    acc_engines = await _engines(profile_name, tp, instances, tier, seed)  # cold restart
    acc = await run_phase(acc_engines, docs, concurrency, max_tokens)
    return CellResult(base, acc)


def cell(profile_name: str, *, tp: int, instances: int, concurrency: int,
         doc_tokens: int = 32064, max_tokens: int = 128, seed: int = 1) -> CellResult:
    return run_virtual(lambda: run_cell(profile_name, tp=tp, instances=instances,
                                        concurrency=concurrency, doc_tokens=doc_tokens,
                                        max_tokens=max_tokens, seed=seed))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m harness.sim.calibrate",
                                 description="Model-time G3 cells for a profile (speed 1).")
    ap.add_argument("--profile", default=None, help="one profile (default: all)")
    ap.add_argument("--doc-tokens", type=int, default=32064)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args(argv)
    names = [args.profile] if args.profile else list(PROFILES)
    print("profile            layout  c   ttft_base  ttft_acc   drop   gain")
    for name in names:
        p = get_profile(name)
        layouts = [(p.ref_tp, 1, f"TP{p.ref_tp}")]
        if p.ref_tp == 1:
            layouts += [(8, 1, "TP8"), (4, 2, "TP4x2")]
        for tp, inst, label in layouts:
            for c in (4, 8, 16):
                r = cell(name, tp=tp, instances=inst, concurrency=c,
                         doc_tokens=args.doc_tokens, max_tokens=args.max_tokens)
                print(f"{name:18} {label:6} {c:3} {r.base.ttft_p50:9.2f}s "
                      f"{r.acc.ttft_p50:8.2f}s {r.drop:6.3f} {r.gain:6.3f}")


if __name__ == "__main__":
    main()
