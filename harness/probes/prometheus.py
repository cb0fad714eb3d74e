"""Prometheus /metrics: parse an exposition, read counters and histograms, prove cache use.

`parse_metrics` is pure (prometheus_client's parser, line by line when the whole text
does not parse, so a PARTIAL excerpt gives what it holds instead of nothing); `scrape`
is the thin fetch. `cache_evidence(before, after)` turns two scrapes of a vLLM (+LMCache)
engine into the deltas that show whether a phase hit the GPU prefix cache, the external
KV tier, or neither.
"""

from __future__ import annotations

import math
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.errors import EndpointError

Labels = tuple[tuple[str, str], ...]

# vLLM V1 names first; older spellings after (gpu_ prefix was V0 / early V1).
PREFIX_QUERIES = ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries")
PREFIX_HITS = ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits")
EXTERNAL_QUERIES = ("vllm:external_prefix_cache_queries",)
# SGLang HiCache with a storage backend (Mooncake, 3FS, file): tokens prefetched from the
# storage tier into host memory (sglang/srt/metrics/collector.py StorageMetricsCollector).
SGLANG_PREFETCHED = "sglang:prefetched_tokens"
EXTERNAL_HITS = ("vllm:external_prefix_cache_hits", SGLANG_PREFETCHED)
# Mooncake Store's master service (its own admin /metrics, default port 9003, not the
# engine's): GetReplicaList lookups, those that found a complete replica, and the bytes
# they served from the memory pool / SSD (mooncake-store/src/master_metric_manager.cpp).
# It counts objects (KV blocks), not tokens: it "cannot perceive requests but only
# detect blocks" (Mooncake issue #1160).
MOONCAKE_LOOKUPS = ("total_get_nums_",)
MOONCAKE_FOUND = ("valid_get_nums_",)
MOONCAKE_HIT_BYTES = ("mem_cache_hit_bytes_total", "file_cache_hit_bytes_total")
# Server-side latency histograms, per engine family (the first family an engine exposes
# is read): the engine's own clock, which G3 and G4 hold the load client's against.
# llama.cpp, TGI's streaming TTFT and Ollama have none: no second clock.
SERVER_TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")
SERVER_E2E = ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds")
# Output tokens the engine generated, whichever engine counts them.
GENERATION_TOKENS = ("vllm:generation_tokens", "sglang:generation_tokens")
# Prompt tokens of the phase, whichever engine counts them.
PROMPT_TOKENS = ("vllm:prompt_tokens", "sglang:prompt_tokens", "llamacpp:prompt_tokens")
# Families that can prove a KV tier outside the GPU was read (docs/engines.md).
TIER_FAMILIES = ("vllm:external_prefix_cache", "lmcache:", SGLANG_PREFETCHED,
                 *MOONCAKE_FOUND)
BY_SOURCE = "vllm:prompt_tokens_by_source"
LMCACHE_REQUESTED = ("lmcache:num_requested_tokens",)
LMCACHE_HIT = ("lmcache:num_hit_tokens",)
LMCACHE_COPIES = "worker_id"  # LMCache under TP: the same totals once per worker
# Families worth keeping as time series during a phase.
SERIES_FAMILIES = (
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:num_preemptions",
    *PREFIX_QUERIES, *PREFIX_HITS, *EXTERNAL_QUERIES, *EXTERNAL_HITS, BY_SOURCE,
    "sglang:prompt_tokens", "sglang:cached_tokens", "sglang:backuped_tokens",
    "sglang:num_running_reqs", "sglang:num_queue_reqs", "llamacpp:prompt_tokens",
)


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Labels
    value: float


def _labels(d: dict[str, str]) -> Labels:
    return tuple(sorted(d.items()))


def _match(have: Labels, want: dict[str, str]) -> bool:
    if not want:
        return True
    hd = dict(have)
    return all(hd.get(k) == v for k, v in want.items())


@dataclass(frozen=True)
class MetricsSnapshot:
    """One scrape: every sample, the declared family types, when and from where."""

    samples: tuple[Sample, ...]
    types: dict[str, str] = field(default_factory=dict)
    source: str = ""
    at: float = 0.0
    skipped: int = 0  # lines that would not parse (a cut-off excerpt)

    def names(self) -> set[str]:
        return {s.name for s in self.samples}

    def _find(self, name: str, labels: dict[str, str]) -> list[Sample]:
        for candidate in (name, name + "_total"):
            hits = [s for s in self.samples if s.name == candidate and _match(s.labels, labels)]
            if hits:
                return hits
        return []

    def has(self, name: str) -> bool:
        return bool(self._find(name, {}))

    def value(self, name: str, copies: str | None = None, **labels: str) -> float | None:
        """The sum of the samples named `name` (or `name_total`) whose labels include
        `labels`; None when the server exposes no such sample.

        copies: a label whose series are copies of one count, counted once (the largest):
        LMCache under TP exports the same totals once per `worker_id`, so summing them
        would multiply its hit tokens by the TP size.
        """
        hits = self._find(name, labels)
        if not hits:
            return None
        if copies is None:
            return sum(s.value for s in hits)
        once: dict[tuple[tuple[str, str], ...], float] = {}
        for s in hits:
            key = tuple(sorted((k, v) for k, v in s.labels if k != copies))
            once[key] = max(once.get(key, s.value), s.value)
        return sum(once.values())

    def sum(self, name: str) -> float:
        """Sum over every label set (0.0 when absent)."""
        return self.value(name) or 0.0

    def by_label(self, name: str, label: str, **labels: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self._find(name, labels):
            key = dict(s.labels).get(label, "")
            out[key] = out.get(key, 0.0) + s.value
        return out

    def first(self, names: Iterable[str]) -> str | None:
        return next((n for n in names if self.has(n)), None)

    def buckets(self, name: str, **labels: str) -> list[tuple[float, float]]:
        """Cumulative (le, count) of histogram `name`, summed over the other labels."""
        acc: dict[float, float] = {}
        for s in self.samples:
            if s.name != name + "_bucket":
                continue
            d = dict(s.labels)
            le = d.pop("le", None)
            if le is None or not all(d.get(k) == v for k, v in labels.items()):
                continue
            bound = math.inf if le in ("+Inf", "Inf", "inf") else float(le)
            acc[bound] = acc.get(bound, 0.0) + s.value
        return sorted(acc.items())

    def quantile(self, name: str, q: float, **labels: str) -> float | None:
        return histogram_quantile(q, self.buckets(name, **labels))

    def series(self, families: Iterable[str] = SERIES_FAMILIES) -> list[Sample]:
        """The samples of the named families (counters as their _total), plus lmcache:*."""
        wanted = set(families)
        keep = {n for n in wanted} | {n + "_total" for n in wanted}
        return [s for s in self.samples
                if s.name in keep or (s.name.startswith("lmcache:")
                                      and not s.name.endswith("_created"))]


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile: linear within the bucket holding rank q * total.
    An excerpt without +Inf uses its largest bucket as the total."""
    if not buckets:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le
            if count == prev_count:
                return le
            lower = prev_le if prev_le < le else 0.0
            return lower + (le - lower) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return buckets[-1][0]


def delta_buckets(before: MetricsSnapshot, after: MetricsSnapshot, name: str,
                  **labels: str) -> list[tuple[float, float]]:
    """Buckets of what happened between two scrapes (a counter reset counts from 0)."""
    b = dict(before.buckets(name, **labels))
    out = []
    for le, count in after.buckets(name, **labels):
        prev = b.get(le, 0.0)
        out.append((le, count - prev if count >= prev else count))
    return out


def _parse_types(text: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                types[parts[2]] = parts[3]
    return types


def parse_metrics(text: str, *, source: str = "", at: float | None = None) -> MetricsSnapshot:
    """Parse a Prometheus text exposition. Never raises on a damaged excerpt: lines that
    do not parse are counted in `skipped`."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: list[Sample] = []
    skipped = 0
    try:
        for fam in text_string_to_metric_families(text):
            samples.extend(Sample(s.name, _labels(s.labels), float(s.value))
                           for s in fam.samples)
    except (ValueError, TypeError, IndexError, KeyError):
        samples = []
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            try:
                for fam in text_string_to_metric_families(line + "\n"):
                    samples.extend(Sample(s.name, _labels(s.labels), float(s.value))
                                   for s in fam.samples)
            except (ValueError, TypeError, IndexError, KeyError):
                skipped += 1
    return MetricsSnapshot(samples=tuple(samples), types=_parse_types(text), source=source,
                           at=time.time() if at is None else at, skipped=skipped)


def metrics_url(url: str) -> str:
    url = url.rstrip("/")
    if url.endswith("/metrics"):
        return url
    if url.endswith("/v1"):
        url = url[:-3]
    return url + "/metrics"


def scrape(url: str, timeout: float = 10) -> MetricsSnapshot:
    """GET the endpoint's /metrics (base URL or the /metrics URL itself) and parse it."""
    target = metrics_url(url)
    at = time.time()
    try:
        with urllib.request.urlopen(target, timeout=timeout) as r:
            text = r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        raise EndpointError(f"/metrics answered HTTP {exc.code}", host=target,
                            stage="scrape") from None
    except (urllib.error.URLError, OSError) as exc:
        raise EndpointError(f"cannot scrape /metrics: {exc}", host=target,
                            stage="scrape") from None
    return parse_metrics(text, source=url, at=at)


def _delta(before: MetricsSnapshot, after: MetricsSnapshot, names: Iterable[str],
           copies: str | None = None) -> tuple[float | None, bool]:
    """(after - before) of the first family present; a counter that went down was reset
    (engine restart) and counts from zero. `copies` as in MetricsSnapshot.value."""
    names = list(names)
    name = after.first(names) or before.first(names)
    if name is None:
        return None, False
    a = after.value(name, copies)
    b = before.value(name, copies) or 0.0
    if a is None:
        return None, False
    return (a - b, False) if a >= b else (a, True)


@dataclass(frozen=True)
class CacheEvidence:
    """What the engine's own counters say a phase did with its prompt tokens (deltas)."""

    prompt_tokens: float | None
    prefix_queries: float | None
    prefix_hits: float | None
    external_queries: float | None
    external_hits: float | None
    by_source: dict[str, float]
    lmcache_requested_tokens: float | None
    lmcache_hit_tokens: float | None
    exposes_external: bool
    counter_reset: bool = False
    source: str = ""
    # A KV store's own counters (Mooncake master): lookups, lookups that found the
    # object, bytes served. None when no store service was scraped.
    store_lookups: float | None = None
    store_found: float | None = None
    store_hit_bytes: float | None = None

    @property
    def external_hit_share(self) -> float | None:
        """Share of the phase's prompt tokens served from the external KV tier: by source
        when vLLM breaks it down, else external hits (vLLM's connector hits, SGLang's
        tokens prefetched from its storage backend) / prompt tokens, else LMCache's
        hit / requested tokens, else (a KV store's counters only) the share of its
        lookups that found the object. None when the server exposes none of these."""
        total = sum(self.by_source.values())
        if total > 0 and "external_kv_transfer" in self.by_source:
            return self.by_source["external_kv_transfer"] / total
        if self.external_hits is not None:
            base = self.prompt_tokens or self.prefix_queries
            if base:
                return self.external_hits / base
        if self.lmcache_hit_tokens is not None and self.lmcache_requested_tokens:
            return self.lmcache_hit_tokens / self.lmcache_requested_tokens
        if self.store_found is not None and self.store_lookups:
            return self.store_found / self.store_lookups
        return None

    @property
    def prefix_hit_share(self) -> float | None:
        if self.prefix_hits is not None and self.prefix_queries:
            return self.prefix_hits / self.prefix_queries
        return None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["external_hit_share"] = self.external_hit_share
        d["prefix_hit_share"] = self.prefix_hit_share
        return d

    def to_samples(self, source: str, at: float) -> list[dict[str, Any]]:
        """Rows for harness.store.writer.insert_series (metric `evidence:<field>`)."""
        rows: list[dict[str, Any]] = []
        for key in ("prompt_tokens", "prefix_queries", "prefix_hits", "external_queries",
                    "external_hits", "lmcache_requested_tokens", "lmcache_hit_tokens",
                    "store_lookups", "store_found", "store_hit_bytes"):
            v = getattr(self, key)
            if v is not None:
                rows.append({"source": source, "metric": f"evidence:{key}", "labels": {},
                             "at": at, "value": float(v)})
        for src, v in sorted(self.by_source.items()):
            rows.append({"source": source, "metric": "evidence:prompt_tokens_by_source",
                         "labels": {"source": src}, "at": at, "value": float(v)})
        share = self.external_hit_share
        if share is not None:
            rows.append({"source": source, "metric": "evidence:external_hit_share",
                         "labels": {}, "at": at, "value": float(share)})
        return rows


def exposes_tier(s: MetricsSnapshot) -> bool:
    """Does this engine expose a counter that can prove a KV tier was read? Declared
    families count too: a labelled counter no request has touched has no sample yet."""
    return any(n.startswith(TIER_FAMILIES) for n in s.names() | set(s.types))


def cache_evidence(before: MetricsSnapshot, after: MetricsSnapshot) -> CacheEvidence:
    """Counter deltas between two scrapes of one engine."""
    reset = False

    def d(names: Iterable[str], copies: str | None = None) -> float | None:
        nonlocal reset
        v, r = _delta(before, after, names, copies)
        reset = reset or r
        return v

    by_source: dict[str, float] = {}
    b_src = before.by_label(BY_SOURCE, "source")
    for src, a in after.by_label(BY_SOURCE, "source").items():
        b = b_src.get(src, 0.0)
        by_source[src] = a - b if a >= b else a
        reset = reset or a < b
    return CacheEvidence(
        prompt_tokens=d(PROMPT_TOKENS), prefix_queries=d(PREFIX_QUERIES),
        prefix_hits=d(PREFIX_HITS), external_queries=d(EXTERNAL_QUERIES),
        external_hits=d(EXTERNAL_HITS), by_source=by_source,
        lmcache_requested_tokens=d(LMCACHE_REQUESTED, LMCACHE_COPIES),
        lmcache_hit_tokens=d(LMCACHE_HIT, LMCACHE_COPIES),
        exposes_external=exposes_tier(after) or exposes_tier(before),
        store_lookups=d(MOONCAKE_LOOKUPS), store_found=d(MOONCAKE_FOUND),
        store_hit_bytes=_sum_deltas(before, after, MOONCAKE_HIT_BYTES),
        # after every d(): a store that restarted mid-phase counts as a reset too
        counter_reset=reset, source=after.source or before.source,
    )


def _sum_deltas(before: MetricsSnapshot, after: MetricsSnapshot,
                names: Iterable[str]) -> float | None:
    """The summed deltas of every family present (memory and SSD hit bytes)."""
    found = [v for n in names if (v := _delta(before, after, (n,))[0]) is not None]
    return sum(found) if found else None


def snapshot_samples(snap: MetricsSnapshot, source: str | None = None,
                     families: Iterable[str] = SERIES_FAMILIES) -> list[dict[str, Any]]:
    """A scrape's known families as insert_series rows (one per sample)."""
    src = source if source is not None else snap.source
    return [{"source": src, "metric": s.name, "labels": dict(s.labels), "at": snap.at,
             "value": s.value} for s in snap.series(families) if not math.isnan(s.value)]
