"""Evidence that the accelerated arm read its KV from the tier and the baseline did not:
engine /metrics deltas over the measured phase, and what the phase's parts the vendor
controls are held against (the devices' reads are sampled in harness/serving/disks.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harness.g3.clocks import client_clock, server_clock
from harness.g3.devices import cold_kv_tokens
from harness.loadgen.records import RequestRecord
from harness.probes.prometheus import CacheEvidence, MetricsSnapshot
from harness.serving.problems import JSONDict

Scraper = Callable[[str], MetricsSnapshot]


def crosschecks(before: Sequence[MetricsSnapshot], after: Sequence[MetricsSnapshot],
                records: Sequence[RequestRecord], lag_p99_ms: float | None,
                evidence: JSONDict) -> JSONDict:
    """What a measured phase's parts the vendor controls are held against (stored with its
    evidence, so a resume judges the same): the engines' own clocks and counters beside
    the client's, the client's own known error (its event-loop lag p99), and the cold KV
    the devices' reads are held against, as numbers the report can sum
    (harness/g3/clocks.py, harness/g3/devices.py). `evidence`: the phase's so far."""
    out: JSONDict = {**server_clock(before, after), **client_clock(records),
                     "client_lag_p99_s": lag_p99_ms / 1000.0 if lag_p99_ms is not None
                     else None,
                     "cold_kv_tokens": cold_kv_tokens(evidence)}
    for side, field in (("storage", "device_bytes_read"), ("kv_volume", "kv_volume_bytes_read")):
        reads = evidence.get(side)
        read = reads.get("bytes_read") if isinstance(reads, dict) else None
        if side == "storage" or reads is not None:  # the GPU hosts' only where declared
            out[field] = float(read) if isinstance(read, int | float) else 0.0
    return out


def scrape_all(urls: Sequence[str], scrape: Scraper) -> list[MetricsSnapshot]:
    return [scrape(f"{u}/metrics") for u in urls]


def summed_evidence(befores: Sequence[MetricsSnapshot], afters: Sequence[MetricsSnapshot],
                    diff: Callable[[MetricsSnapshot, MetricsSnapshot], CacheEvidence],
                    engines: int | None = None) -> JSONDict:
    """Cache evidence per instance, summed over the layout's instances, with the share
    computed by CacheEvidence's own precedence (prompt tokens by source, else vLLM's
    external hits, else LMCache hit / requested, which is the same on every TP worker,
    else a KV store's found / looked-up objects). `befores`/`afters` may include a KV
    store's scrapes (gates.g3.evidence.store_metrics) after the first `engines` (the
    engines'; None: all are engines). Only an engine's counter sets `exposes_external`:
    a store's counters are service-wide (any client moves them) and count memory-pool
    hits too, so they are storage-side evidence (`store_exposes`), never an engine's
    word."""
    from dataclasses import replace

    per = [diff(b, a) for b, a in zip(befores, afters, strict=True)]
    n = len(per) if engines is None else engines
    fields = ("prompt_tokens", "prefix_queries", "prefix_hits", "external_queries",
              "external_hits", "lmcache_requested_tokens", "lmcache_hit_tokens",
              "store_lookups", "store_found", "store_hit_bytes")

    def total(name: str) -> float | None:
        vals = [float(v) for e in per if (v := getattr(e, name)) is not None]
        return float(sum(vals)) if vals else None

    by_source: dict[str, float] = {}
    for e in per:
        for k, v in (e.by_source or {}).items():
            by_source[k] = by_source.get(k, 0.0) + float(v)
    totals = {f: total(f) for f in fields}
    combined = replace(per[0], by_source=by_source,
                       exposes_external=any(e.exposes_external for e in per[:n]),
                       counter_reset=any(e.counter_reset for e in per),
                       prompt_tokens=totals["prompt_tokens"],
                       prefix_queries=totals["prefix_queries"],
                       prefix_hits=totals["prefix_hits"],
                       external_queries=totals["external_queries"],
                       external_hits=totals["external_hits"],
                       lmcache_requested_tokens=totals["lmcache_requested_tokens"],
                       lmcache_hit_tokens=totals["lmcache_hit_tokens"],
                       store_lookups=totals["store_lookups"],
                       store_found=totals["store_found"],
                       store_hit_bytes=totals["store_hit_bytes"])
    out: JSONDict = dict(totals)
    out["by_source"] = dict(by_source)
    out["exposes_external"] = combined.exposes_external
    out["store_exposes"] = any(e.exposes_external for e in per[n:])
    out["counter_reset"] = combined.counter_reset
    share = combined.external_hit_share
    out["external_hit_share"] = float(share) if share is not None else 0.0
    # Any external hit at all on the baseline is contamination, whichever counter saw it.
    out["external_hit_tokens"] = max(by_source.get("external_kv_transfer", 0.0),
                                     combined.external_hits or 0.0,
                                     combined.lmcache_hit_tokens or 0.0)
    return out
