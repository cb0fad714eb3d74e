"""Store a phase as it runs: the benchmark row first, request rows in batches as they
finish (so a killed process loses at most one batch), the summary and /metrics at the end.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.loadgen.engine import PhaseResult
from harness.loadgen.records import RequestRecord
from harness.loadgen.sampler import MetricsSampler
from harness.store.db import Store
from harness.store.writer import finish_benchmark, insert_requests, insert_series, start_benchmark


class RequestSink:
    """An `on_batch` callback that bulk-inserts each batch into `request` (writer thread)."""

    def __init__(self, store: Store, benchmark_id: int) -> None:
        self.store = store
        self.benchmark_id = benchmark_id
        self.stored = 0

    def __call__(self, batch: Sequence[RequestRecord]) -> None:
        self.stored += insert_requests(self.store, self.benchmark_id,
                                       [r.to_row() for r in batch])


def begin(store: Store, run_id: int, *, params: Mapping[str, Any], arm: str = "",
          layout: str = "", tier: int = 0, repetition: int = 0, phase: str = "measured",
          driver: str = "gate") -> tuple[int, RequestSink]:
    bid = start_benchmark(store, run_id, arm=arm, layout=layout, tier=tier,
                          repetition=repetition, phase=phase, driver=driver, params=params)
    return bid, RequestSink(store, bid)


def finish(store: Store, run_id: int, benchmark_id: int, result: PhaseResult | None, *,
           sampler: MetricsSampler | None = None, status: str = "FINISHED",
           extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write the summary (with per-instance summaries and cache evidence) and the scrapes."""
    summary: dict[str, Any] = {}
    if result is not None:
        summary = result.summary.to_dict()
        summary["per_instance"] = {str(k): v.to_dict() for k, v in result.per_instance.items()}
        summary["started_at"] = result.started_at
    if sampler is not None:
        now = time.time()
        evidence = {}
        rows: list[dict[str, Any]] = sampler.series_rows()
        for sc in sampler.scrapes:
            ev = sc.evidence()
            if ev is not None:
                evidence[sc.url] = ev.to_dict()
                rows.extend(ev.to_samples(sc.url, now))
            if sc.errors:
                evidence.setdefault(sc.url, {})["scrape_errors"] = sc.errors[:5]
        summary["cache_evidence"] = evidence
        insert_series(store, run_id, rows, benchmark_id=benchmark_id)
    if extra:
        summary.update(extra)
    finish_benchmark(store, benchmark_id, status=status,
                     duration=result.wall_time if result is not None else 0.0, summary=summary)
    return summary
