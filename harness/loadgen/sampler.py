"""Scrape every endpoint's /metrics before, during (every `interval` s) and after a phase.

Runs in its own thread with blocking HTTP, so it never touches the event loop that times
the streams. A scrape that fails during the phase is noted, not fatal: the evidence is
the before/after pair, and those are taken synchronously and do raise.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import EndpointError
from harness.probes.prometheus import (
    CacheEvidence,
    MetricsSnapshot,
    cache_evidence,
    scrape,
    snapshot_samples,
)


@dataclass
class Scrapes:
    url: str
    before: MetricsSnapshot | None = None
    after: MetricsSnapshot | None = None
    during: list[MetricsSnapshot] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def evidence(self) -> CacheEvidence | None:
        if self.before is None or self.after is None:
            return None
        return cache_evidence(self.before, self.after)


class MetricsSampler:
    """with MetricsSampler(urls, 5.0) as s: run the phase; then s.scrapes[i].evidence()."""

    def __init__(self, urls: Sequence[str], interval: float = 5.0, timeout: float = 10.0,
                 required: bool = False) -> None:
        self.scrapes = [Scrapes(u) for u in urls]
        self.interval = interval
        self.timeout = timeout
        self.required = required
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _take(self, sc: Scrapes, strict: bool) -> MetricsSnapshot | None:
        try:
            return scrape(sc.url, self.timeout)
        except EndpointError as exc:
            if strict:
                raise
            sc.errors.append(exc.one_line())
            return None

    def __enter__(self) -> MetricsSampler:
        for sc in self.scrapes:
            sc.before = self._take(sc, self.required)
        if self.interval > 0:
            self._thread = threading.Thread(target=self._loop, name="gate-metrics", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            for sc in self.scrapes:
                snap = self._take(sc, False)
                if snap is not None:
                    sc.during.append(snap)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 1)
        for sc in self.scrapes:
            sc.after = self._take(sc, False)

    def series_rows(self) -> list[dict[str, Any]]:
        """Every scrape's known families, as insert_series rows."""
        rows: list[dict[str, Any]] = []
        for sc in self.scrapes:
            for snap in [sc.before, *sc.during, sc.after]:
                if snap is not None:
                    rows.extend(snapshot_samples(snap, sc.url))
        return rows
