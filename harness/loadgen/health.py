"""A load phase's own health: was the load generator able to send and time requests?

Why: a client short of CPU sends late and stamps chunks late, and every number it
measures shrinks toward the host's limit instead of the server's: seen on a busy
2-core machine as G3 gains of 0.28-0.31 where the simulated truth is ~0.35, with nothing
saying why. A phase therefore measures, while it runs:

- event-loop lag: a task sleeps `interval` over and over; what it oversleeps is how long
  a ready callback (a chunk's timestamp, a send) waited for the loop;
- CPU of this process (os.times) and of the host (/proc/stat deltas);
- sends later than their moment: open loop, the send vs its scheduled time (held by the
  concurrency cap or by a busy loop alike); closed loop, the send vs the moment the
  slot's previous response ended;
- open loop: the rate the requests went out at vs the rate asked for;
- a simulator behind its own modelled schedule (harness/loadgen/simlag.py).

`judge` compares the reading with bounds (the site config's `load.health`) and says
`saturated` with human reasons. Absolute bounds alone let a client be far off what it
measures and say nothing (a 4 ms loop lag is nothing against a 300 ms TTFT and
everything against a 1.7 ms one), so the client's delay is also judged as a share of
the TTFT p50 the phase measured (docs/metrics.md "Phase health"). Everything here is
plain data (to_dict / from_dict), so a load agent on another host can send it back.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class HealthBounds:
    """Limits past which a phase's client counts as saturated (see load.health in
    harness/config/models.py for why each default is what it is). Every bound is a
    maximum: raising one is a weaker test."""

    max_loop_lag_p99_ms: float = 100.0
    late_after_ms: float = 50.0
    max_late_share: float = 0.05
    max_process_cpu: float = 0.95
    max_host_cpu: float = 1.0
    max_sim_lag_share: float = 0.25
    max_client_delay_share: float = 0.10  # mean loop lag / the phase's TTFT p50
    max_client_tail_share: float = 1.0  # loop lag p99 / the phase's TTFT p50
    max_rate_shortfall: float = 0.05  # open loop: 1 - achieved / target send rate

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HealthBounds:
        """Keys this version does not know are ignored, missing ones take their default
        (a record or an agent from another version)."""
        return cls(**{k: float(d[k]) for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class CpuSample:
    """One /proc/stat `cpu` line: jiffies busy and in total (all cores)."""

    busy: int
    total: int


def parse_proc_stat(text: str) -> CpuSample | None:
    """The aggregate `cpu` line of /proc/stat. Busy is everything but idle and iowait;
    guest time is already inside user (and guest_nice inside nice), so only the first
    eight fields are summed. None when there is no such line."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                vals = [int(v) for v in parts[1:9]]
            except ValueError:
                return None
            if len(vals) < 4:
                return None
            vals += [0] * (8 - len(vals))
            total = sum(vals)
            return CpuSample(busy=total - vals[3] - vals[4], total=total)
    return None


def host_cpu_sample(path: Path = PROC_STAT) -> CpuSample | None:
    try:
        return parse_proc_stat(path.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None


def host_cpu_share(before: CpuSample | None, after: CpuSample | None) -> float | None:
    """Busy share of all the host's cores between two samples (None: unknown)."""
    if before is None or after is None or after.total <= before.total:
        return None
    return (after.busy - before.busy) / (after.total - before.total)


def process_cpu_seconds() -> float:
    """User + system CPU of this process (every thread: the store writer and the
    /metrics sampler compete with the event loop for the same GIL)."""
    t = os.times()
    return t.user + t.system


class LoopLagMonitor:
    """Measures how late the running event loop wakes a sleeping task.

    async with LoopLagMonitor() as lag: ...; lag.samples are oversleeps in seconds
    (negative when a wake came early: judge clamps them), 8 bytes each (a 72 h phase
    keeps 26 M of them). One wake per `interval` costs a few microseconds: ~0.1 % of a
    core at 10 ms, too little to show in benchmarks/loadgen.py, while a 0.7 s demo phase
    still gets ~70 samples (a coarser sampler would leave its p99 to one or two wakes).
    """

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.samples: array.array[float] = array.array("d")
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        monotonic = time.monotonic
        append = self.samples.append
        interval = self.interval
        while True:
            t = monotonic()
            await asyncio.sleep(interval)
            append(monotonic() - t - interval)

    async def __aenter__(self) -> LoopLagMonitor:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


@dataclass(frozen=True)
class HealthReading:
    """What was measured during one phase, before any judgement."""

    wall_s: float
    loop_lag_s: Sequence[float] = ()
    process_cpu_s: float = 0.0
    host_cpu: float | None = None
    # closed loop: send - the moment its slot freed; open loop: send - its schedule
    send_lag_s: Sequence[float] = ()
    sim_lag_max_s: float | None = None  # None: no simulator, or no new maximum
    sim_lag_mean_s: float | None = None
    ttft_p50_s: float | None = None  # the TTFT p50 the phase measured (None: none)
    open_loop: bool = False
    concurrency: int = 0
    capped_sends: int = 0  # open loop: sends that found every slot busy when due
    scheduled_span_s: float | None = None  # open loop: last send's due time, from start
    sent_span_s: float | None = None  # ... and when it really went


@dataclass(frozen=True)
class PhaseHealth:
    """A phase's health, judged: numbers, the bounds used, saturated and why.
    Fields added later have defaults, so a record stored before them reads back."""

    loop_lag_p50_ms: float | None = None
    loop_lag_p99_ms: float | None = None
    loop_lag_max_ms: float | None = None
    loop_samples: int = 0
    process_cpu: float | None = None  # share of one core
    host_cpu: float | None = None  # busy share of all cores
    sends: int = 0
    late_sends: int = 0
    late_share: float = 0.0
    send_lag_p99_ms: float | None = None
    sim_lag_max_s: float | None = None
    sim_lag_mean_ms: float | None = None
    bounds: HealthBounds = field(default_factory=HealthBounds)
    reasons: tuple[str, ...] = ()
    # the client's own error, against what the phase measured
    loop_lag_mean_ms: float | None = None
    ttft_p50_ms: float | None = None
    client_delay_share: float | None = None  # mean loop lag / TTFT p50
    client_tail_share: float | None = None  # loop lag p99 / TTFT p50
    open_loop: bool = False
    held_by_cap: int = 0  # open loop: sends that found every slot busy when due
    target_rate: float | None = None  # open loop, req/s
    achieved_rate: float | None = None

    @property
    def saturated(self) -> bool:
        return bool(self.reasons)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bounds"] = self.bounds.to_dict()
        d["reasons"] = list(self.reasons)
        d["saturated"] = self.saturated
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PhaseHealth:
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d
              and k not in ("bounds", "reasons")}
        return cls(**kw, bounds=HealthBounds.from_dict(d.get("bounds") or {}),
                   reasons=tuple(str(r) for r in d.get("reasons") or ()))


def _ms(x: float) -> float:
    return round(x * 1000.0, 3)


def _t(ms: float) -> str:
    """A duration for a reason: two significant digits under 10 ms, whole ms above."""
    return f"{ms:.2g}" if ms < 10 else f"{ms:.0f}"


@dataclass(frozen=True)
class _Rates:
    target: float | None = None
    achieved: float | None = None
    behind_s: float = 0.0


def _rates(r: HealthReading) -> _Rates:
    """Open loop: the send rate asked for (sends over the span their schedule gave them)
    and the one reached (the same sends over the span they really took)."""
    n, sched, sent = len(r.send_lag_s), r.scheduled_span_s, r.sent_span_s
    if not r.open_loop or n < 2 or sched is None or sent is None or sched <= 0 or sent <= 0:
        return _Rates()
    return _Rates(target=n / sched, achieved=n / sent, behind_s=max(0.0, sent - sched))


def judge(r: HealthReading, bounds: HealthBounds) -> PhaseHealth:
    """The reading against the bounds: every bound crossed is one reason."""
    reasons: list[str] = []
    p50 = p99 = worst = mean = None
    if len(r.loop_lag_s):
        lag = np.maximum(np.asarray(r.loop_lag_s, dtype=float), 0.0)
        p50, p99, worst = (_ms(float(v)) for v in np.percentile(lag, (50, 99, 100)))
        mean = _ms(float(lag.mean()))
        if p99 > bounds.max_loop_lag_p99_ms:
            reasons.append(f"event-loop lag p99 {p99:.0f} ms > {bounds.max_loop_lag_p99_ms:g} ms")
    ttft = _ms(r.ttft_p50_s) if r.ttft_p50_s is not None and r.ttft_p50_s > 0 else None
    delay_share = tail_share = None
    if ttft is not None and mean is not None and p99 is not None:
        delay_share, tail_share = round(mean / ttft, 4), round(p99 / ttft, 4)
        if delay_share > bounds.max_client_delay_share:
            reasons.append(f"client delay {_t(mean)} ms (mean event-loop lag) is "
                           f"{delay_share:.0%} of the TTFT p50 {_t(ttft)} ms it measured "
                           f"(> {bounds.max_client_delay_share:.0%})")
        if tail_share > bounds.max_client_tail_share:
            reasons.append(f"client delay p99 {_t(p99)} ms (event-loop lag) is "
                           f"{tail_share:.0%} of the TTFT p50 {_t(ttft)} ms it measured "
                           f"(> {bounds.max_client_tail_share:.0%})")
    lags = np.asarray(r.send_lag_s, dtype=float)
    sends = int(lags.size)
    late = int(np.count_nonzero(lags * 1000.0 > bounds.late_after_ms)) if sends else 0
    share = late / sends if sends else 0.0
    send_p99 = _ms(float(np.percentile(lags, 99))) if sends else None
    if share > bounds.max_late_share:
        reasons.append(_late_reason(r, late, sends, share, bounds))
    rates = _rates(r)
    if rates.target is not None and rates.achieved is not None \
            and rates.achieved < rates.target * (1.0 - bounds.max_rate_shortfall) \
            and rates.behind_s * 1000.0 > bounds.late_after_ms:
        reasons.append(f"open loop sent {rates.achieved:.0f} req/s, "
                       f"{rates.achieved / rates.target:.0%} of the target "
                       f"{rates.target:.0f} req/s (short by more than "
                       f"{bounds.max_rate_shortfall:.0%}; the last send "
                       f"{rates.behind_s:.2f} s behind its schedule)")
    cpu = r.process_cpu_s / r.wall_s if r.wall_s > 0 else None
    if cpu is not None and cpu > bounds.max_process_cpu:
        reasons.append(f"load generator used {cpu:.0%} of a core (> "
                       f"{bounds.max_process_cpu:.0%})")
    if r.host_cpu is not None and r.host_cpu > bounds.max_host_cpu:
        reasons.append(f"host CPU {r.host_cpu:.0%} busy (> {bounds.max_host_cpu:.0%})")
    if r.sim_lag_max_s is not None and r.wall_s > 0 \
            and r.sim_lag_max_s / r.wall_s > bounds.max_sim_lag_share:
        reasons.append(f"simulator fell behind its schedule by {r.sim_lag_max_s:.2f} s "
                       f"({r.sim_lag_max_s / r.wall_s:.0%} of the {r.wall_s:.2f} s phase > "
                       f"{bounds.max_sim_lag_share:.0%})")
    return PhaseHealth(
        loop_lag_p50_ms=p50, loop_lag_p99_ms=p99, loop_lag_max_ms=worst,
        loop_samples=len(r.loop_lag_s),
        process_cpu=round(cpu, 4) if cpu is not None else None,
        host_cpu=round(r.host_cpu, 4) if r.host_cpu is not None else None,
        sends=sends, late_sends=late, late_share=round(share, 4), send_lag_p99_ms=send_p99,
        sim_lag_max_s=r.sim_lag_max_s,
        sim_lag_mean_ms=_ms(r.sim_lag_mean_s) if r.sim_lag_mean_s is not None else None,
        bounds=bounds, reasons=tuple(reasons), loop_lag_mean_ms=mean, ttft_p50_ms=ttft,
        client_delay_share=delay_share, client_tail_share=tail_share,
        open_loop=r.open_loop, held_by_cap=r.capped_sends if r.open_loop else 0,
        target_rate=round(rates.target, 3) if rates.target is not None else None,
        achieved_rate=round(rates.achieved, 3) if rates.achieved is not None else None)


def _late_reason(r: HealthReading, late: int, sends: int, share: float,
                 b: HealthBounds) -> str:
    """Closed loop: sent late after its slot freed. Open loop: sent late after its
    schedule, and what held it: every slot busy (the concurrency cap) or the loop."""
    head = f"{late} of {sends} requests sent more than {b.late_after_ms:g} ms "
    tail = f"({share:.0%} > {b.max_late_share:.0%})"
    if not r.open_loop:
        return head + "late " + tail
    cause = (f"{r.capped_sends} of the sends found all {r.concurrency} slots busy: the "
             "concurrency cap held them" if r.capped_sends
             else "no slot was full: the event loop held them")
    return head + f"after their scheduled time {tail}; {cause}"
