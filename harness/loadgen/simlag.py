"""Did a simulated engine fall behind its own modelled schedule during a phase?

The simulator's step clock counts how late it woke behind the time its model said
(gate_sim_schedule_* on its /metrics, harness/sim/scheduler.py ScheduleLag). A phase
scrapes each endpoint before and after and takes the deltas: a real engine exposes none
of these and reads as "nothing to say". Scrapes here are best-effort: the phase's own
evidence scrapes are the ones that must succeed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.errors import EndpointError
from harness.probes.prometheus import MetricsSnapshot, scrape

WAKES = "gate_sim_schedule_wakes"
LAG_TOTAL = "gate_sim_schedule_lag_seconds"
LAG_MAX = "gate_sim_schedule_lag_max_seconds"


@dataclass(frozen=True)
class SimLag:
    max_s: float | None  # the phase's largest lag, when it set a new maximum
    mean_s: float | None  # mean lag per wake during the phase


def read(urls: Sequence[str], timeout: float = 5.0) -> list[MetricsSnapshot | None]:
    """One scrape per endpoint; None where it failed or the endpoint is no simulator."""
    out: list[MetricsSnapshot | None] = []
    for url in urls:
        try:
            snap = scrape(url, timeout)
        except EndpointError:
            snap = None
        out.append(snap if snap is not None and snap.has(WAKES) else None)
    return out


def during(before: Sequence[MetricsSnapshot | None],
           after: Sequence[MetricsSnapshot | None]) -> SimLag:
    """The worst endpoint's lag between the two scrapes. The max gauge holds since the
    engine started, so it speaks for this phase only when the phase raised it; a counter
    that went back (the engine restarted) says nothing."""
    worst: float | None = None
    total = wakes = 0.0
    if len(before) != len(after):
        raise ValueError("one scrape after per scrape before")
    for b, a in ((before[k], after[k]) for k in range(len(before))):
        if b is None or a is None:
            continue
        bw, aw = b.value(WAKES) or 0.0, a.value(WAKES) or 0.0
        bt, at = b.value(LAG_TOTAL) or 0.0, a.value(LAG_TOTAL) or 0.0
        if aw < bw or at < bt:
            continue
        wakes += aw - bw
        total += at - bt
        bm, am = b.value(LAG_MAX) or 0.0, a.value(LAG_MAX) or 0.0
        if am > bm:
            worst = am if worst is None else max(worst, am)
    return SimLag(max_s=worst, mean_s=total / wakes if wakes else None)
