"""The simulator says when it falls behind its own modelled schedule, and a phase reads
it from two /metrics scrapes (harness/loadgen/simlag.py)."""

from __future__ import annotations

import asyncio
import time

from harness.loadgen.simlag import during
from harness.probes.prometheus import MetricsSnapshot, parse_metrics
from harness.sim.engine import Engine, Rates
from harness.sim.metrics import Identity, build_registry, render
from harness.sim.profiles import get_profile


def _blocked_engine() -> tuple[MetricsSnapshot, MetricsSnapshot]:
    """Scrapes before and after one request's step whose loop was blocked for 0.3 s."""

    async def main() -> tuple[MetricsSnapshot, MetricsSnapshot]:
        p = get_profile("r1-qwen32b")
        engine = Engine(Rates.of(p, 1), tier=None, speed=1.0, seed=0, salt="x")
        await engine.start()
        reg = build_registry(engine, Identity("m", p.name, 1, 0, False, 1.0, p.max_model_len))
        before = parse_metrics(render(reg).decode())
        clock = engine.clock
        clock.join()
        asyncio.get_running_loop().call_later(0.01, time.sleep, 0.3)  # a starved host
        await clock.work(0.05)  # due 50 ms from now, woken only after the block
        clock.leave()
        return before, parse_metrics(render(reg).decode())

    return asyncio.run(main())


def test_a_blocked_simulator_reports_its_lag_and_the_phase_reads_it() -> None:
    before, after = _blocked_engine()
    assert before.value("gate_sim_schedule_lag_max_seconds") == 0.0
    worst = after.value("gate_sim_schedule_lag_max_seconds")
    assert worst is not None and worst >= 0.2
    assert (after.value("gate_sim_schedule_wakes") or 0) >= 1
    lag = during([before], [after])
    assert lag.max_s == worst and lag.mean_s is not None and lag.mean_s > 0


def test_no_simulator_or_a_restarted_one_says_nothing() -> None:
    before, after = _blocked_engine()
    assert during([None], [after]).max_s is None
    restarted = during([after], [before])  # counters went back: another process
    assert restarted.max_s is None and restarted.mean_s is None
