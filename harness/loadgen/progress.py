"""The live progress line on stderr: done / failed / in flight, elapsed, live TTFT p50.

The hot path only bumps counters; rich redraws from its own thread a few times a second,
so the display costs the streams nothing measurable.
"""

from __future__ import annotations

import collections
import time
from typing import Any

from harness.loadgen.records import RequestRecord


class Progress:
    def __init__(self, total: int, *, enabled: bool = True) -> None:
        self.total = total
        self.enabled = enabled
        self.done = 0
        self.failed = 0
        self.in_flight = 0
        self.t_start = time.monotonic()
        self.t_measure: float | None = None
        self.ttfts: collections.deque[float] = collections.deque(maxlen=1024)
        self._live: Any = None

    def started(self) -> None:
        self.in_flight += 1

    def finished(self, rec: RequestRecord) -> None:
        self.in_flight -= 1
        self.done += 1
        if rec.error_kind is not None:
            self.failed += 1
        elif rec.ttft is not None:
            self.ttfts.append(rec.ttft)

    def measuring(self, at: float) -> None:
        self.t_measure = at

    def line(self) -> str:
        now = time.monotonic()
        elapsed = now - self.t_start
        recent = sorted(self.ttfts)
        p50 = f"{recent[len(recent) // 2] * 1000:.1f} ms" if recent else "-"
        stage = "measuring" if self.t_measure is not None else "warm-up"
        return (f"{stage}  done {self.done}/{self.total}  failed {self.failed}  "
                f"in flight {self.in_flight}  elapsed {elapsed:.1f} s  TTFT p50 {p50}")

    def __rich__(self) -> str:
        return self.line()

    def start(self) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.live import Live

        console = Console(stderr=True)
        self._live = Live(self, console=console, refresh_per_second=4, transient=False)
        self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
