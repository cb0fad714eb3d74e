"""Whether the soak's engines are still the processes the gate started, read by the gate
itself: the process listening on each instance's port, its pid and start time (as G3's
inspection reads them), at every hardware reading.

Why a second count of restarts: the soak counts them from the engine's own /metrics
(`process_start_time_seconds`), which the engine, in the vendor's hands, writes itself:
one that restarts and carries its old start time and counters over hides the restart. A
new process has a new pid or start time on the host, whatever its metrics say. Each
change is recorded as a new engine process of the run and as the series
`g4:engine_changes` (per instance, the changes seen so far), so a resumed viewer carries
on, and the restarts criterion holds the larger of the two counts (harness/g4/criteria.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from harness.g4.said import SaidOnce
from harness.serving.inspection import Inspector
from harness.store import engines as store_engines
from harness.store.db import Store
from harness.store.writer import insert_series, series_of

METRIC = "g4:engine_changes"
Key = tuple[int, int]  # (pid, start ticks)


@dataclass(frozen=True)
class Instance:
    host: str
    port: int
    index: int
    url: str

    @property
    def source(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class ProcessWatch:
    inspector: Inspector
    instances: Sequence[Instance]
    arm: str
    layout: str
    store: Store
    run_id: int
    event: Callable[..., None]
    last: dict[int, Key] = field(default_factory=dict)  # instance -> the process last seen
    changes: dict[int, int] = field(default_factory=dict)
    _said: SaidOnce = field(default_factory=SaidOnce)

    def resume(self) -> None:
        """Carry on from what an earlier viewer recorded: the latest process of each
        instance and the changes counted so far."""
        for proc in store_engines.open_engines(self.store, run_id=self.run_id):
            if proc.arm == self.arm and proc.layout == self.layout:
                self.last[proc.instance] = (proc.pid, proc.start_ticks)  # rows in id order
        counted = series_of(self.store, self.run_id, METRIC)
        for inst in self.instances:
            seen = counted.get(inst.source)
            if seen:
                self.changes[inst.index] = int(seen[-1][1])

    def sample(self) -> None:
        rows = []
        for inst in self.instances:
            seen = self.inspector.listener(inst.host, inst.port)
            if seen.proc is None:
                if self._said.new(inst.index, seen.problem):
                    self.event(source="harness", name="G4 engine process", host=inst.host,
                               status="failed", message=seen.problem[:500])
                continue
            key = (seen.proc.pid, seen.proc.start_ticks)
            before = self.last.get(inst.index)
            if before is not None and before != key:
                self.changes[inst.index] = self.changes.get(inst.index, 0) + 1
                store_engines.record_engine(
                    self.store, self.run_id, host=inst.host, pid=key[0], start_ticks=key[1],
                    arm=self.arm, layout=self.layout, instance=inst.index, url=inst.url)
                self.event(source="harness", name="G4 engine process changed",
                           host=inst.host, status="changed",
                           message=f"{inst.source}: pid {before[0]} -> {key[0]} (a restart, "
                                   "whatever the engine's metrics say)")
            self.last[inst.index] = key
            rows.append({"source": inst.source, "metric": METRIC, "labels": {},
                         "at": time.time(), "value": float(self.changes.get(inst.index, 0))})
        insert_series(self.store, self.run_id, rows)


def changes_per_window(series: dict[str, list[tuple[float, float]]], started_at: float,
                       window_s: float, windows: int) -> list[int]:
    """The process changes each window's readings found, summed over instances (a change
    read after the last window counts in the last). Pure."""
    out = [0] * windows
    for samples in series.values():
        before = 0.0
        for at, count in sorted(samples):
            if count > before and windows:
                k = min(windows - 1, max(0, int((at - started_at) // window_s)))
                out[k] += int(count - before)
            before = max(before, count)
    return out
