"""The engine model in virtual time (no wall clock, so exact): processor sharing on the
shared step clock, the tier's bandwidth and latency in TTFT, and seeded faults. The
profiles' calibration targets are in tests/integration/test_sim_calibration.py."""

from __future__ import annotations

import asyncio

import pytest

from harness.sim.calibrate import make_docs, run_phase, run_virtual
from harness.sim.engine import Engine, Rates, Trace
from harness.sim.faults import FaultDraws
from harness.sim.profiles import PROFILES, get_profile
from harness.sim.scheduler import SharedStepClock
from harness.sim.spec import FaultSpec
from harness.sim.tier import MemoryTierIndex


def test_shared_clock_is_processor_sharing() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        clock = SharedStepClock(speed=2.0, slowdown=1.0)
        done: list[float] = []

        async def job(work: float) -> None:
            clock.join()
            await clock.work(work)
            done.append(loop.time())
            clock.leave()

        await asyncio.gather(job(1.0), job(3.0))
        return done

    first, second = run_virtual(main)
    # two jobs share: each at 1/2 of speed 2 -> the 1 s job ends at t=1.0; the other
    # then runs alone (2 s left at speed 2 -> 1 s more)
    assert first == pytest.approx(1.0, abs=2e-3)
    assert second == pytest.approx(2.0, abs=2e-3)


async def _ttft(read_gbps: float, latency: float) -> float:
    p = get_profile("r1-qwen32b")
    rates = Rates.of(p, 1)
    from dataclasses import replace

    rates = replace(rates, read_bps=read_gbps * 1e9, latency_s=latency, jitter_sigma=0.0)
    tier = MemoryTierIndex(p.tier_capacity_tokens)
    doc = make_docs(1, 8192, seed=3)
    for _ in range(2):  # warm (stores), then a "restart" that reads it back
        engine = Engine(rates, tier=tier, speed=1.0, seed=0, salt="calibrate")
        await engine.start()
        trace = Trace()
        async for _ in engine.generate(doc[0], 2, trace):
            pass
        await asyncio.sleep(10)  # write-behind lands
    assert trace.external_hit == 8192 - 16  # all but the block that must be recomputed
    assert trace.first_token is not None
    return trace.first_token - trace.arrival


def test_half_the_bandwidth_doubles_the_read() -> None:
    full = run_virtual(lambda: _ttft(10.0, 0.0))
    half = run_virtual(lambda: _ttft(5.0, 0.0))
    bytes_read = (8192 - 16) * get_profile("r1-qwen32b").kv_bytes_per_token
    assert full == pytest.approx(bytes_read / 10e9 + 16 / 12894, rel=0.01)
    assert half - full == pytest.approx(bytes_read / 10e9, rel=0.01)
    assert run_virtual(lambda: _ttft(10.0, 0.5)) - full == pytest.approx(0.5, abs=0.01)


def test_every_profile_is_well_formed() -> None:
    for p in PROFILES.values():
        assert p.tier_chunk_tokens % p.block_size == 0
        assert p.kv_bytes_per_token == p.layers * p.kv_heads * p.head_dim * 2 * p.dtype_bytes
    assert get_profile("r1-qwen32b").kv_bytes_per_token == 256 * 1024


def test_max_num_seqs_queues_the_rest() -> None:
    async def main() -> tuple[int, float]:
        from dataclasses import replace

        p = get_profile("r1-qwen32b")
        engine = Engine(replace(Rates.of(p, 1), max_num_seqs=2), tier=None, speed=1.0,
                        seed=0, salt="calibrate")
        await engine.start()
        docs = make_docs(3, 64, seed=1)
        seen = 0

        async def peek() -> None:
            nonlocal seen
            await asyncio.sleep(0.001)
            seen = engine.stats.waiting

        res, _ = await asyncio.gather(run_phase([engine], docs, 3, 4), peek())
        return seen, res.wall

    waiting, _ = run_virtual(main)
    assert waiting == 1


def test_fault_draws_are_seeded() -> None:
    spec = FaultSpec(error_rate=0.3, stall_rate=0.2)
    a = [FaultDraws(spec, 5).draw(16, stream=True) for _ in range(1)]
    draws1 = FaultDraws(spec, 5)
    draws2 = FaultDraws(spec, 5)
    seq1 = [draws1.draw(16, stream=True) for _ in range(200)]
    seq2 = [draws2.draw(16, stream=True) for _ in range(200)]
    assert seq1 == seq2 and a[0] == seq1[0]
    kinds = [f.kind for f in seq1]
    assert 30 < kinds.count("http_500") + kinds.count("cut") < 90
    assert kinds.count("cut") > 0 and kinds.count("http_500") > 0
    assert all(0 < f.cut_after < 16 for f in seq1 if f.kind == "cut")
    assert all(f.kind != "cut" for f in (FaultDraws(spec, 1).draw(16, stream=False)
                                         for _ in range(100)))
    assert FaultDraws(FaultSpec(), 0).draw(16, stream=True).kind == "none"
