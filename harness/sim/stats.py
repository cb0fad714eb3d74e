"""The engine's counters, kept as plain numbers on the hot path and turned into a
Prometheus exposition only when /metrics is scraped (harness.sim.metrics).

Semantics follow vLLM V1: prefix-cache queries and hits count tokens, recorded when a
request is scheduled; external (KV connector) queries count the whole prompt and hits the
tokens loaded from the connector; prompt tokens split by source. LMCache counters mirror
what its vLLM connector reports per TP worker.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
TOKEN_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
                 5000.0, 10000.0, 20000.0, 50000.0, 100000.0, 200000.0)
RETRIEVE_BUCKETS = TTFT_BUCKETS
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")


class Histogram:
    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[int]:
        out, total = [], 0
        for c in self.counts:
            total += c
            out.append(total)
        return out


def _h(bounds: tuple[float, ...]) -> Histogram:
    return Histogram(bounds)


@dataclass
class EngineStats:
    prefix_queries: int = 0
    prefix_hits: int = 0
    external_queries: int = 0
    external_hits: int = 0
    prompt_tokens: int = 0
    by_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    generation_tokens: int = 0
    success: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FINISH_REASONS, 0))
    waiting: int = 0
    running_tokens: int = 0
    ttft: Histogram = field(default_factory=lambda: _h(TTFT_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: _h(E2E_BUCKETS))
    queue_time: Histogram = field(default_factory=lambda: _h(E2E_BUCKETS))
    prefill_time: Histogram = field(default_factory=lambda: _h(E2E_BUCKETS))
    decode_time: Histogram = field(default_factory=lambda: _h(E2E_BUCKETS))
    inference_time: Histogram = field(default_factory=lambda: _h(E2E_BUCKETS))
    tpot: Histogram = field(default_factory=lambda: _h(TPOT_BUCKETS))
    prompt_hist: Histogram = field(default_factory=lambda: _h(TOKEN_BUCKETS))
    generation_hist: Histogram = field(default_factory=lambda: _h(TOKEN_BUCKETS))
    max_tokens_hist: Histogram = field(default_factory=lambda: _h(TOKEN_BUCKETS))
    # LMCache (only exported with the external tier on)
    lm_lookup_requests: int = 0
    lm_lookup_tokens: int = 0
    lm_retrieve_requests: int = 0
    lm_requested_tokens: int = 0
    lm_hit_tokens: int = 0
    lm_store_requests: int = 0
    lm_stored_tokens: int = 0
    lm_remote_reads: int = 0
    lm_remote_read_bytes: int = 0
    lm_retrieve_time: Histogram = field(default_factory=lambda: _h(RETRIEVE_BUCKETS))

    def record_schedule(self, prompt: int, local_hit: int, external_hit: int,
                        connector: bool) -> None:
        self.prefix_queries += prompt
        self.prefix_hits += local_hit
        if connector:
            self.external_queries += prompt
            self.external_hits += external_hit
        self.prompt_tokens += prompt
        self.by_source["local_cache_hit"] += local_hit
        self.by_source["external_kv_transfer"] += external_hit
        self.by_source["local_compute"] += prompt - local_hit - external_hit
        self.prompt_hist.observe(prompt)
