"""Store a phase as it runs: the benchmark row first, request rows in batches as they
finish (so a killed process loses at most one batch), series and the summary at the end.

The one way a phase reaches the store, for `gate bench`, `gate import vllm-bench`, G3's
warm and measured phases (and later G4), so every benchmark row's summary has one shape:

    the phase's Summary (vLLM's result keys), per_instance, started_at, stored_requests,
    health (harness/loadgen/health.py PhaseHealth.to_dict), stopped (why it ended early,
    when it did), cache_evidence (when /metrics was sampled), then the caller's extras
    (G3: evidence, fixed_output, identity; import: recomputed, warnings).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.loadgen.phase import PhaseOutcome
from harness.loadgen.records import RequestRecord
from harness.loadgen.sampler import MetricsSampler
from harness.store.db import Store
from harness.store.writer import (
    finish_benchmark,
    insert_request_values,
    insert_series,
    start_benchmark,
)

LABEL = "bench{}"  # a phase's label where it runs: its benchmark row's id
_LABELLED = re.compile(r"^bench(\d+)-")


def benchmark_of(name: str) -> int | None:
    """The benchmark id a phase's directory name (`bench12-...`) starts with, or None."""
    m = _LABELLED.match(name)
    return int(m[1]) if m else None


@dataclass(frozen=True)
class PhaseKey:
    """Where a phase sits in its run (the benchmark row's coordinates)."""

    arm: str = ""
    layout: str = ""
    tier: int = 0
    repetition: int = 0
    phase: str = "measured"
    driver: str = "gate"


class RequestSink:
    """An `on_batch` callback that bulk-inserts each batch into `request` (writer thread)."""

    def __init__(self, store: Store, benchmark_id: int) -> None:
        self.store = store
        self.benchmark_id = benchmark_id
        self.stored = 0

    def __call__(self, batch: Sequence[RequestRecord]) -> None:
        self.stored += insert_request_values(self.store, self.benchmark_id,
                                             [r.values() for r in batch])


def sampled(sampler: MetricsSampler) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(series rows, cache evidence per URL) of a MetricsSampler that has run."""
    now = time.time()
    evidence: dict[str, Any] = {}
    rows: list[dict[str, Any]] = sampler.series_rows()
    for sc in sampler.scrapes:
        ev = sc.evidence()
        if ev is not None:
            evidence[sc.url] = ev.to_dict()
            rows.extend(ev.to_samples(sc.url, now))
        if sc.errors:
            evidence.setdefault(sc.url, {})["scrape_errors"] = sc.errors[:5]
    return rows, evidence


def phase_summary(outcome: PhaseOutcome | None) -> dict[str, Any]:
    """The measured part of the summary (empty when the phase produced no outcome)."""
    if outcome is None:
        return {}
    r = outcome.result
    out: dict[str, Any] = r.summary.to_dict()
    out["per_instance"] = {str(k): v.to_dict() for k, v in r.per_instance.items()}
    out["started_at"] = r.started_at
    out["health"] = outcome.health.to_dict()
    if r.params.get("http_client"):  # which HTTP client carried it (docs/metrics.md)
        out["http_client"] = r.params["http_client"]
    if outcome.status == "TIMEOUT":
        timeout = r.params.get("phase_timeout")
        cancelled = sum(1 for x in r.records if x.error_kind == "cancelled")
        out["stopped"] = (f"phase_timeout ({timeout:g} s) reached after {r.wall_time:.1f} s: "
                          f"{cancelled} requests in flight were cancelled, "
                          f"{len(r.records) - cancelled} had finished")
    return out


class PhaseWriter:
    """One phase's benchmark row: opened before the first request, its request rows
    stored by `sink` as they finish, closed by `finish` with the summary."""

    def __init__(self, store: Store, run_id: int, key: PhaseKey,
                 params: Mapping[str, Any]) -> None:
        self.store = store
        self.run_id = run_id
        self.benchmark_id = start_benchmark(store, run_id, arm=key.arm, layout=key.layout,
                                            tier=key.tier, repetition=key.repetition,
                                            phase=key.phase, driver=key.driver, params=params)
        self.sink = RequestSink(store, self.benchmark_id)

    @property
    def label(self) -> str:
        """What the executor calls this phase where it runs (harness.loadgen.phase)."""
        return LABEL.format(self.benchmark_id)

    def finish(self, outcome: PhaseOutcome | None, *, status: str | None = None,
               series: Sequence[Mapping[str, Any]] = (),
               cache_evidence: Mapping[str, Any] | None = None,
               extra: Mapping[str, Any] | None = None,
               duration: float | None = None) -> dict[str, Any]:
        """Write the series and the summary; status defaults to the outcome's (ABORTED
        without one), duration to its wall time."""
        summary = phase_summary(outcome)
        summary["stored_requests"] = self.sink.stored
        if cache_evidence is not None:
            summary["cache_evidence"] = dict(cache_evidence)
        if extra:
            summary.update(extra)
        if series:
            insert_series(self.store, self.run_id, [dict(r) for r in series],
                          benchmark_id=self.benchmark_id)
        wall = outcome.result.wall_time if outcome is not None else 0.0
        finish_benchmark(self.store, self.benchmark_id,
                         status=status or (outcome.status if outcome is not None else "ABORTED"),
                         duration=wall if duration is None else duration, summary=summary)
        return summary
