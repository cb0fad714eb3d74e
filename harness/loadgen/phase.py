"""One load phase as plain data: what to run (PhaseSpec), what came back (PhaseOutcome),
and who runs it (an Executor).

Why a seam: bench, G3 and later G4 all run "a phase" and must not care where its event
loop lives. Today the loop runs in this process (InProcessExecutor); a later issue runs it
on the site's client host through an agent. So the spec and the outcome hold only
JSON-able values (to_dict / from_dict), no store, session or callback; the one callback,
`on_batch`, is the executor's argument, for storing request rows as they finish.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Protocol

from harness.loadgen import engine, health, simlag
from harness.loadgen.client import Api
from harness.loadgen.engine import Arrival, OnBatch, PhaseResult
from harness.loadgen.health import HealthBounds, HealthReading, PhaseHealth
from harness.loadgen.metrics import summarize
from harness.loadgen.records import Endpoint, RequestRecord, RequestSpec
from harness.loadgen.sends import Sends

Status = Literal["FINISHED", "TIMEOUT"]


@dataclass(frozen=True)
class PhaseSpec:
    """Everything one phase needs. Closed loop at `concurrency` when `rate` is None, else
    open loop at `rate` req/s capped at `concurrency`; `requests` start with `warmup`
    warm-up ones; it ends when they are sent and answered, at `duration` s of sending,
    or at `phase_timeout` s (then TIMEOUT, what completed is kept)."""

    endpoints: tuple[Endpoint, ...]
    requests: tuple[RequestSpec, ...]
    concurrency: int
    rate: float | None = None
    arrival: Arrival = "poisson"
    burstiness: float = 1.0
    warmup: int = 0
    duration: float | None = None
    seed: int = 0
    timeout: float = 1800.0  # per request, s
    phase_timeout: float | None = None
    api: Api = "completions"
    extra_body: Mapping[str, Any] | None = None
    slo: Mapping[str, float] | None = None
    tag: str = "gate"
    health: HealthBounds = field(default_factory=HealthBounds)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["endpoints"] = [asdict(e) for e in self.endpoints]
        d["requests"] = [asdict(r) for r in self.requests]
        d["extra_body"] = dict(self.extra_body) if self.extra_body is not None else None
        d["slo"] = dict(self.slo) if self.slo is not None else None
        d["health"] = self.health.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhaseSpec:
        return cls(
            endpoints=tuple(Endpoint(str(e["url"]), str(e["model"]), int(e["instance"]))
                            for e in d["endpoints"]),
            requests=tuple(RequestSpec(str(r["prompt"]), int(r["max_tokens"]),
                                       int(r["doc_id"]), r.get("prompt_tokens"), r.get("at"))
                           for r in d["requests"]),
            concurrency=int(d["concurrency"]), rate=d.get("rate"),
            arrival=d.get("arrival", "poisson"), burstiness=float(d.get("burstiness", 1.0)),
            warmup=int(d.get("warmup", 0)), duration=d.get("duration"),
            seed=int(d.get("seed", 0)), timeout=float(d.get("timeout", 1800.0)),
            phase_timeout=d.get("phase_timeout"), api=d.get("api", "completions"),
            extra_body=d.get("extra_body"), slo=d.get("slo"), tag=str(d.get("tag", "gate")),
            health=HealthBounds.from_dict(d.get("health") or {}))


@dataclass(frozen=True)
class PhaseOutcome:
    """A phase's per-request records and timing (PhaseResult) and its own health."""

    result: PhaseResult
    health: PhaseHealth
    status: Status = "FINISHED"

    @property
    def records(self) -> list[RequestRecord]:
        return self.result.records

    def to_dict(self) -> dict[str, Any]:
        """Records in full (chunk times included); summaries are recomputed on the way
        back in, so they cannot disagree with the records."""
        r = self.result
        return {"status": self.status, "health": self.health.to_dict(),
                "records": [record_dict(x) for x in r.records], "wall_time": r.wall_time,
                "started_at": r.started_at, "monotonic_start": r.monotonic_start,
                "timed_out": r.timed_out, "params": r.params}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any],
                  records: list[RequestRecord] | None = None) -> PhaseOutcome:
        """From to_dict's form; `records` given when they came apart (the load agent's
        record file), instead of d["records"]."""
        if records is None:
            records = [RequestRecord(**x) for x in d["records"]]
        params = dict(d.get("params") or {})
        wall = float(d["wall_time"])
        slo = params.get("slo")
        instances = sorted({int(e["instance"]) for e in params.get("endpoints") or []}
                           or {x.instance for x in records} or {0})
        summary = summarize(records, wall, slo=slo)
        per_instance = {instances[0]: summary} if len(instances) == 1 else {
            k: summarize([x for x in records if x.instance == k], wall, slo=slo)
            for k in instances}
        result = PhaseResult(records=records, wall_time=wall,
                             started_at=float(d["started_at"]), per_instance=per_instance,
                             summary=summary, params=params,
                             monotonic_start=float(d.get("monotonic_start", 0.0)),
                             timed_out=bool(d.get("timed_out", False)))
        return cls(result=result, health=PhaseHealth.from_dict(d["health"]),
                   status="TIMEOUT" if d.get("status") == "TIMEOUT" else "FINISHED")


def record_dict(r: RequestRecord) -> dict[str, Any]:
    return {f.name: getattr(r, f.name) for f in fields(r)}


class Executor(Protocol):
    """Runs a phase somewhere and hands finished records to `on_batch` as they come.
    `label` says whose phase it is (its benchmark row: PhaseWriter.label); an executor
    that runs it elsewhere names it so, for a gate that died to find it again."""

    def run(self, spec: PhaseSpec, on_batch: OnBatch | None = None, *,
            label: str = "") -> PhaseOutcome: ...


@dataclass(frozen=True)
class InProcessExecutor:
    """The asyncio engine (harness/loadgen/engine.py) in this process, uvloop when
    installed, with its health measured around it."""

    progress: bool = True
    lag_interval: float = 0.01

    def run(self, spec: PhaseSpec, on_batch: OnBatch | None = None, *,
            label: str = "") -> PhaseOutcome:
        """label: unused; a phase in this process ends with it."""
        with asyncio.Runner(loop_factory=engine.loop_factory()) as runner:
            return runner.run(self.run_async(spec, on_batch))

    async def run_async(self, spec: PhaseSpec, on_batch: OnBatch | None = None
                        ) -> PhaseOutcome:
        loop = asyncio.get_running_loop()
        urls = [e.url for e in spec.endpoints]
        sim_before = await loop.run_in_executor(None, simlag.read, urls)
        sends = Sends()
        host0, cpu0, t0 = health.host_cpu_sample(), health.process_cpu_seconds(), \
            time.monotonic()
        async with health.LoopLagMonitor(self.lag_interval) as lag:
            result = await engine.run_phase_async(
                spec.endpoints, spec.requests, concurrency=spec.concurrency, api=spec.api,
                rate=spec.rate, arrival=spec.arrival, burstiness=spec.burstiness,
                seed=spec.seed, timeout=spec.timeout, warmup=spec.warmup,
                duration=spec.duration, progress=self.progress, on_batch=on_batch,
                slo=dict(spec.slo) if spec.slo is not None else None,
                extra_body=dict(spec.extra_body) if spec.extra_body is not None else None,
                tag=spec.tag, phase_timeout=spec.phase_timeout, sends=sends)
        wall = time.monotonic() - t0
        cpu, host1 = health.process_cpu_seconds() - cpu0, health.host_cpu_sample()
        sim = simlag.during(sim_before, await loop.run_in_executor(None, simlag.read, urls))
        ttft = result.summary.ttft  # the measured requests' TTFT: what the client's
        reading = HealthReading(  # own delay is judged against
            wall_s=wall, loop_lag_s=lag.samples, process_cpu_s=cpu,
            host_cpu=health.host_cpu_share(host0, host1), send_lag_s=sends.lags,
            sim_lag_max_s=sim.max_s, sim_lag_mean_s=sim.mean_s,
            ttft_p50_s=ttft.median / 1000.0 if ttft.n else None,
            open_loop=sends.open_loop, concurrency=spec.concurrency,
            capped_sends=sends.capped, scheduled_span_s=sends.scheduled_span,
            sent_span_s=sends.sent_span)
        result = replace(result, params={**result.params, "slo": spec.slo and dict(spec.slo)})
        return PhaseOutcome(result=result, health=health.judge(reading, spec.health),
                            status="TIMEOUT" if result.timed_out else "FINISHED")
