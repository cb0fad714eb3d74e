"""Evidence that the accelerated arm read its KV from the tier and the baseline did not:
engine /metrics deltas over the measured phase, and storage read bandwidth sampled from
/proc/diskstats on the storage hosts over their Transport (as at a real site)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.errors import GateError
from harness.g3.clocks import client_clock, server_clock
from harness.g3.devices import cold_kv_tokens
from harness.g3.problems import JSONDict
from harness.loadgen.records import RequestRecord
from harness.probes.diskstats import total_bytes_read
from harness.probes.prometheus import CacheEvidence, MetricsSnapshot
from harness.transport import Transport


@dataclass
class StorageSample:
    host: str
    at: float
    bytes_read: int


@dataclass
class StorageSampler:
    """Reads diskstats on each storage host every `interval` s in a background thread."""

    hosts: Sequence[tuple[str, Transport]]
    path: str
    devices: list[str]
    interval: float = 1.0
    samples: list[StorageSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _read_all(self) -> None:
        for name, transport in self.hosts:
            try:
                text = transport.read_file(self.path).decode("utf-8", "replace")
                self.samples.append(StorageSample(name, time.time(),
                                                  total_bytes_read(text, self.devices)))
            except (GateError, OSError) as exc:
                self.errors.append(f"{name}: {exc}")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._read_all()

    def __enter__(self) -> StorageSampler:
        self._read_all()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="diskstats")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 30)
        self._read_all()

    def series(self) -> list[JSONDict]:
        """Cumulative bytes read since the phase began, per host (store `series` rows)."""
        first: dict[str, int] = {}
        out: list[JSONDict] = []
        for s in self.samples:
            base = first.setdefault(s.host, s.bytes_read)
            out.append({"source": s.host, "metric": "storage_read_bytes", "labels": {},
                        "at": s.at, "value": float(s.bytes_read - base)})
        return out

    def bandwidth(self) -> dict[str, float]:
        """GB/s between samples, summed over hosts per instant: p50, max and total bytes;
        `hosts`: how many storage hosts were read at the phase's start and end (0: none
        sampled, so the bytes say nothing)."""
        rates: list[float] = []
        total = 0.0
        hosts = 0
        for host in {s.host for s in self.samples}:
            pts = [s for s in self.samples if s.host == host]
            total += pts[-1].bytes_read - pts[0].bytes_read if pts else 0
            hosts += len(pts) >= 2
            for a, b in itertools.pairwise(pts):
                if b.at > a.at:
                    rates.append((b.bytes_read - a.bytes_read) / (b.at - a.at) / 1e9)
        if not rates:
            return {"gbps_p50": 0.0, "gbps_max": 0.0, "bytes_read": total,
                    "hosts": float(hosts)}
        arr = np.asarray(rates)
        return {"gbps_p50": float(np.percentile(arr, 50)), "gbps_max": float(arr.max()),
                "bytes_read": total, "hosts": float(hosts)}


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
    storage = evidence.get("storage")
    read = storage.get("bytes_read") if isinstance(storage, dict) else None
    out["device_bytes_read"] = float(read) if isinstance(read, int | float) else 0.0
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
