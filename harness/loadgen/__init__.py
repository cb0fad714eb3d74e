"""The load generator: OpenAI-compatible streaming client, workloads, vLLM-exact metrics.

    probe(url) -> ServerInfo                   is it up, OpenAI-compatible, what it serves
    doc_qa(...) / trace_replay(...) / sharegpt(...) -> Workload
    InProcessExecutor().run(PhaseSpec(...)) -> PhaseOutcome   records, timing, health
    run_phase(endpoints, specs, ...) -> PhaseResult   records + Summary (+ per instance)
    summarize(records, wall_time) -> Summary   vLLM's calculate_metrics, plus gate variants
    scrape(url) / cache_evidence(before, after)  /metrics evidence (harness.probes.prometheus)
"""

from __future__ import annotations

from harness.loadgen.engine import PhaseResult, arrival_offsets, run_phase, run_phase_async
from harness.loadgen.health import HealthBounds, PhaseHealth
from harness.loadgen.metrics import Dist, Summary, percentile_inf, summarize
from harness.loadgen.phase import Executor, InProcessExecutor, PhaseOutcome, PhaseSpec
from harness.loadgen.probe import ServerInfo, probe, require_model
from harness.loadgen.records import (
    Endpoint,
    RequestRecord,
    RequestSpec,
    base_url,
    pack_chunks,
    unpack_chunks,
)
from harness.loadgen.workloads import Workload, doc_qa, sharegpt, trace_replay
from harness.probes.prometheus import CacheEvidence, MetricsSnapshot, cache_evidence, scrape

__all__ = [
    "CacheEvidence",
    "Dist",
    "Endpoint",
    "Executor",
    "HealthBounds",
    "InProcessExecutor",
    "MetricsSnapshot",
    "PhaseHealth",
    "PhaseOutcome",
    "PhaseResult",
    "PhaseSpec",
    "RequestRecord",
    "RequestSpec",
    "ServerInfo",
    "Summary",
    "Workload",
    "arrival_offsets",
    "base_url",
    "cache_evidence",
    "doc_qa",
    "pack_chunks",
    "percentile_inf",
    "probe",
    "require_model",
    "run_phase",
    "run_phase_async",
    "scrape",
    "sharegpt",
    "summarize",
    "trace_replay",
    "unpack_chunks",
]
