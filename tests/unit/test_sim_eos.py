"""Early stops at an EOS (eos_rate): the seeded draws, and the engine model ending a
request there, in virtual time (exact); a default engine's modelled numbers pinned."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.sim.calibrate import make_docs, run_virtual
from harness.sim.engine import Engine, Rates, Trace
from harness.sim.eos import EosDraws
from harness.sim.profiles import get_profile
from harness.sim.prompt import Prompt
from harness.sim.tier import MemoryTierIndex


def _draws(seed: int, n: int = 200, rate: float = 0.5, **kw: Any) -> list[int | None]:
    d = EosDraws(rate, seed)
    return [d.draw(16, **kw) for _ in range(n)]


def test_rate_zero_never_stops() -> None:
    assert _draws(1, rate=0.0) == [None] * 200


def test_draws_are_seeded() -> None:
    assert _draws(7) == _draws(7)
    assert _draws(7) != _draws(8)


def test_share_and_range() -> None:
    d = EosDraws(0.3, 42)
    got = [d.draw(10, min_tokens=3) for _ in range(20000)]
    stops = [k for k in got if k is not None]
    assert len(stops) / len(got) == pytest.approx(0.3, abs=0.015)
    # the EOS is generated after min_tokens tokens and counts: 4..9, never max_tokens
    assert set(stops) == set(range(4, 10))
    full = [EosDraws(1.0, s).draw(2) for s in range(50)]
    assert full == [1] * 50  # the only early stop of a 2-token request: the EOS first


def test_ignore_eos_and_min_tokens_do_not_shift_later_draws() -> None:
    """Two draws per request whatever it asked: request k's fate is the same."""
    plain = _draws(3)
    mixed_d = EosDraws(0.5, 3)
    mixed = [mixed_d.draw(16, ignore_eos=i % 3 == 0, min_tokens=15 if i % 5 == 0 else 0)
             for i in range(200)]
    for i, (a, b) in enumerate(zip(plain, mixed, strict=True)):
        if i % 3 == 0 or i % 5 == 0:
            assert b is None  # ignore_eos, or min_tokens 15 of 16: no room for an early EOS
        else:
            assert a == b
    assert any(a is not None for a in plain)


async def _run(max_tokens: int, eos_at: int | None, stream_interval: int = 1,
               ) -> tuple[Trace, list[tuple[float, int]], Engine]:
    p = get_profile("r1-qwen32b")
    engine = Engine(Rates.of(p, 8), tier=None, speed=1.0, seed=5, salt="x",
                    stream_interval=stream_interval)
    await engine.start()
    loop = asyncio.get_running_loop()
    trace = Trace()
    chunks: list[tuple[float, int]] = []
    doc = make_docs(1, 2000, seed=1)[0]
    async for ids in engine.generate(doc, max_tokens, trace, eos_at=eos_at):
        chunks.append((loop.time(), len(ids)))
    return trace, chunks, engine


@pytest.mark.parametrize("interval", [1, 4])
def test_engine_stops_at_the_eos_on_the_same_clock(interval: int) -> None:
    trace, chunks, engine = run_virtual(lambda: _run(32, 9, interval))
    assert trace.output_tokens == 9 and sum(n for _, n in chunks) == 9
    assert trace.finish == "stop"
    st = engine.stats
    assert st.success["stop"] == 1 and st.success["length"] == 0
    assert st.generation_tokens == 9 and st.generation_hist.count == 1
    assert st.max_tokens_hist.sum == 32  # what was asked for, as vLLM records it
    assert st.e2e.count == 1 and st.running_tokens == 0
    full, full_chunks, _ = run_virtual(lambda: _run(32, None, interval))
    assert full.finish == "length" and full.output_tokens == 32
    # the same jitter draws and step clock: the first 9 tokens come at the same times
    assert trace.first_token == pytest.approx(full.first_token, abs=1e-9)
    t9 = next(t for t, n in _cumulative(full_chunks) if n >= 9)
    assert chunks[-1][0] == pytest.approx(t9, abs=1e-9)


def _cumulative(chunks: list[tuple[float, int]]) -> list[tuple[float, int]]:
    out, n = [], 0
    for t, k in chunks:
        n += k
        out.append((t, n))
    return out


def test_eos_at_the_first_token() -> None:
    trace, chunks, engine = run_virtual(lambda: _run(16, 1))
    assert (trace.output_tokens, trace.finish, len(chunks)) == (1, "stop", 1)
    assert engine.stats.tpot.count == 0  # one token: no time per output token


# What r1-qwen32b at TP8 modelled for these requests before eos_rate existed (virtual
# time, seed 7, c = 4, a stall on every third request; tier off, then on: warm, and
# after a cold restart): sums of TTFT and e2e, tokens, hits. A default engine (eos_rate 0,
# no eos_at) must keep every number.
PINNED = {
    "off": (1.203844988, 12.164734283, 320, 0),
    "warm": (1.203844988, 12.164734283, 320, 0),
    "restart": (0.388334017, 11.25133395, 320, 30720),
}


def _pinned_run() -> dict[str, tuple[float, float, int, int]]:
    async def main() -> dict[str, tuple[float, float, int, int]]:
        p = get_profile("r1-qwen32b")
        docs = make_docs(8, 4000, 5)
        tier = MemoryTierIndex(p.tier_capacity_tokens)
        out = {}
        for name, t in (("off", None), ("warm", tier), ("restart", tier)):
            engine = Engine(Rates.of(p, 8), tier=t, speed=1.0, seed=7000, salt="pin")
            await engine.start()
            queue = list(enumerate(docs))

            async def client(engine: Engine = engine, queue: list[tuple[int, Prompt]] = queue,
                             ) -> None:
                while queue:
                    i, doc = queue.pop(0)
                    kw: dict[str, Any] = {"stall_at": 5, "stall_s": 2.0} if i % 3 == 0 else {}
                    async for _ in engine.generate(doc, 40, Trace(), **kw):
                        pass

            await asyncio.gather(*(client() for _ in range(4)))
            st = engine.stats
            out[name] = (round(st.ttft.sum, 9), round(st.e2e.sum, 9), st.generation_tokens,
                         st.external_hits)
            await asyncio.sleep(60)  # the write-behind lands before the restart
        return out

    return run_virtual(main)


def test_default_engine_numbers_are_pinned() -> None:
    assert _pinned_run() == PINNED
