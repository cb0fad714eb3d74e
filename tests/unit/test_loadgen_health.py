"""Phase health: loop lag measured on a real event loop, /proc/stat parsing, judgement,
and the phase spec / outcome as plain data."""

from __future__ import annotations

import asyncio
import json
import time

from harness.loadgen.engine import PhaseResult
from harness.loadgen.health import (
    CpuSample,
    HealthBounds,
    HealthReading,
    LoopLagMonitor,
    PhaseHealth,
    host_cpu_share,
    judge,
    parse_proc_stat,
)
from harness.loadgen.metrics import summarize
from harness.loadgen.phase import PhaseOutcome, PhaseSpec
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec

# /proc/stat of a 2-core machine (captured; the per-cpu lines and the rest trimmed)
PROC_STAT = """cpu  4705 356 584 3699 23 0 23 5 7 1
cpu0 1393 280 283 1835 9 0 11 3 4 1
cpu1 3312 76 301 1864 14 0 12 2 3 0
intr 114930548 113199788 3 0 5 263 0 4 [... lots more numbers ...]
ctxt 1990473
btime 1062191376
"""


def test_loop_lag_shows_a_callback_that_blocks_the_loop() -> None:
    async def phase() -> list[float]:
        async with LoopLagMonitor(0.005) as lag:
            await asyncio.sleep(0.05)
            time.sleep(0.3)  # a callback hogging the loop, as a starved client does
            await asyncio.sleep(0.05)
        return lag.samples

    samples = asyncio.run(phase())
    assert samples and max(samples) >= 0.25
    health = judge(HealthReading(wall_s=0.4, loop_lag_s=samples),
                   HealthBounds(max_loop_lag_p99_ms=100.0))
    assert health.loop_lag_max_ms is not None and health.loop_lag_max_ms >= 250
    assert health.saturated and health.reason.startswith("event-loop lag p99 ")


def test_proc_stat_busy_is_all_but_idle_and_iowait() -> None:
    sample = parse_proc_stat(PROC_STAT)
    # user..steal summed (guest is inside user already): 4705+356+584+3699+23+0+23+5
    assert sample == CpuSample(busy=4705 + 356 + 584 + 0 + 23 + 5, total=9395)
    later = CpuSample(busy=sample.busy + 150, total=sample.total + 200)
    assert host_cpu_share(sample, later) == 0.75
    assert host_cpu_share(sample, None) is None and host_cpu_share(later, sample) is None
    assert parse_proc_stat("intr 1 2 3\n") is None


def test_each_crossed_bound_is_one_reason() -> None:
    bounds = HealthBounds(max_loop_lag_p99_ms=50, late_after_ms=10, max_late_share=0.1,
                          max_process_cpu=0.9, max_host_cpu=0.95, max_sim_lag_share=0.1)
    calm = judge(HealthReading(wall_s=10, loop_lag_s=[0.001] * 100, process_cpu_s=3,
                               host_cpu=0.5, send_lag_s=[0.001] * 20), bounds)
    assert not calm.saturated and calm.late_sends == 0 and calm.process_cpu == 0.3
    bad = judge(HealthReading(wall_s=10, loop_lag_s=[0.14] * 100, process_cpu_s=9.8,
                              host_cpu=0.99, send_lag_s=[0.02] * 5 + [0.0] * 5,
                              sim_lag_max_s=1.25, sim_lag_mean_s=0.01), bounds)
    assert bad.reasons == (
        "event-loop lag p99 140 ms > 50 ms",
        "5 of 10 requests sent more than 10 ms late (50% > 10%)",
        "load generator used 98% of a core (> 90%)",
        "host CPU 99% busy (> 95%)",
        "simulator fell behind its schedule by 1.25 s (12% of the 10.00 s phase > 10%)",
    )
    again = PhaseHealth.from_dict(json.loads(json.dumps(bad.to_dict())))
    assert again == bad and again.to_dict()["saturated"] is True


def test_spec_round_trips_through_json() -> None:
    spec = PhaseSpec(endpoints=(Endpoint("http://h:1", "m", 0), Endpoint("http://h:2", "m", 1)),
                     requests=(RequestSpec("p", 8, 3, 120), RequestSpec("q", 8, 4, None, 0.5)),
                     concurrency=4, rate=2.5, arrival="constant", warmup=1, duration=30.0,
                     seed=9, timeout=60.0, phase_timeout=600.0, api="chat",
                     extra_body={"ignore_eos": True}, slo={"ttft": 500.0}, tag="t",
                     health=HealthBounds(max_loop_lag_p99_ms=20.0))
    assert PhaseSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


def test_outcome_round_trips_and_recomputes_its_summary() -> None:
    recs = [RequestRecord(idx=i, instance=i % 2, doc_id=i, warmup=False, scheduled=0.0,
                          sent=0.01 * i, ttft=0.1 + i / 100, e2el=0.3,
                          chunk_times=[0.1 + i / 100, 0.2, 0.3], prompt_tokens=10,
                          output_tokens=3, usage_reported=True, status=200,
                          finish_reason="length") for i in range(4)]
    recs.append(RequestRecord(idx=4, instance=0, doc_id=4, warmup=False, scheduled=0.0,
                              error_kind="cancelled", error="stopped"))
    summary = summarize(recs, 2.0)
    result = PhaseResult(records=recs, wall_time=2.0, started_at=1.7e9,
                         per_instance={0: summarize([r for r in recs if r.instance == 0], 2.0),
                                       1: summarize([r for r in recs if r.instance == 1], 2.0)},
                         summary=summary, params={"endpoints": [
                             {"url": "u0", "model": "m", "instance": 0},
                             {"url": "u1", "model": "m", "instance": 1}], "phase_timeout": 5},
                         timed_out=True)
    out = PhaseOutcome(result=result, health=PhaseHealth(loop_samples=3), status="TIMEOUT")
    back = PhaseOutcome.from_dict(json.loads(json.dumps(out.to_dict())))
    assert back.status == "TIMEOUT" and back.result.timed_out
    assert back.records == recs and back.health == out.health
    assert back.result.summary.to_dict() == summary.to_dict()
    assert {k: v.to_dict() for k, v in back.result.per_instance.items()} == \
        {k: v.to_dict() for k, v in result.per_instance.items()}
