"""A soak's requests cut into fixed windows, each summarised the way G4 judges it. Pure.

A request belongs to the window it was sent in (its latency, its error); the tokens it
produced count where it completed, so a window's throughput is what the engine delivered
in it. The accelerator's evidence (the engine's external-tier hit tokens and the storage
hosts' device reads) comes from counters sampled at window edges, passed in per window.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.loadgen.records import RequestRecord


@dataclass(frozen=True)
class ClientClock:
    """The soak's requests keyed as an engine's own counters see them: by when the first
    token came (its TTFT histogram observes then) and when the request ended (its e2e
    histogram, its generation-token counter). The gate holds these against the engines'
    counters it scrapes itself (harness/g4/engine_clock.py)."""

    first_tokens: int  # requests whose first token came in this window
    ttft_sum_s: float  # their TTFTs, summed
    completed: int  # requests that completed in this window
    ended: int  # requests that ended in it, failed ones included


@dataclass(frozen=True)
class EngineClock:
    """The engines' own counters over one window, scraped by the gate and summed over
    the soaked layout's instances (None: not exposed, or not sampled around the window)."""

    ttft_sum_s: float | None = None  # the TTFT histogram's _sum rise
    ttft_count: float | None = None  # its _count rise
    requests: float | None = None  # the e2e histogram's _count rise: requests ended
    generation_tokens: float | None = None
    hit_tokens: float | None = None  # KV-tier hits, as soak_counters.hit_tokens reads them
    # the first window of the sampling gap this window's rises were spread over (the
    # viewer was away); None: sampled around it. A gap's windows are judged as one.
    spread_from: int | None = None

    @property
    def ttft_mean_s(self) -> float | None:
        if self.ttft_sum_s is None or not self.ttft_count:
            return None
        return self.ttft_sum_s / self.ttft_count


@dataclass(frozen=True)
class Evidence:
    """Counter deltas over one window (None: not sampled in it)."""

    external_hit_tokens: float | None = None  # the engine's KV-tier hits (tokens)
    device_read_bytes: float | None = None  # the accelerator's devices (storage hosts)
    kv_volume_read_bytes: float | None = None  # the GPU hosts' KV volume (customer's side)
    engine_rss_bytes: float | None = None  # at the window's end
    engine_restarts: int = 0  # as the engine's own /metrics show them
    engine_changes: int = 0  # new engine processes the gate itself saw (g4/processes.py)
    engine_clock: EngineClock | None = None  # the gate's own scrapes (None: never taken)
    # the first window of the sampling gap whose reads this window shares (devices.spread);
    # None: its reads were sampled around it
    spread_from: int | None = None


@dataclass(frozen=True)
class Window:
    index: int
    start_s: float  # from the soak's start
    length_s: float
    requests: int
    errors: Mapping[str, int] = field(default_factory=dict)  # by error kind
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    tpot_p50_s: float | None = None
    output_tokens: int = 0  # of the requests that completed in this window
    evidence: Evidence = Evidence()
    clock: ClientClock | None = None  # None: a soak that did not write it

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    @property
    def error_rate(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    @property
    def throughput_tps(self) -> float:
        return self.output_tokens / self.length_s

    @property
    def mid_h(self) -> float:
        """The window's middle, in hours from the soak's start (where a trend is fitted)."""
        return (self.start_s + self.length_s / 2) / 3600.0


def _p(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def cut(records: Iterable[RequestRecord], window_s: float, windows: int,
        evidence: Sequence[Evidence] = ()) -> list[Window]:
    """`windows` windows of `window_s` seconds from the soak's start (records' `sent` and
    completion are seconds from it); warm-up requests and unsent ones are left out."""
    if window_s <= 0 or windows < 0:
        raise ValueError(f"need window_s > 0 and windows >= 0, got {window_s}, {windows}")
    sent: list[list[RequestRecord]] = [[] for _ in range(windows)]
    tokens = [0] * windows
    for r in records:
        if r.warmup or r.sent is None:
            continue
        i = math.floor(r.sent / window_s)
        if 0 <= i < windows:
            sent[i].append(r)
        if r.ok and r.e2el is not None and r.output_tokens:
            j = math.floor((r.sent + r.e2el) / window_s)
            if 0 <= j < windows:
                tokens[j] += r.output_tokens
    return [summarise(i, window_s, rs, tokens[i],
                      evidence[i] if i < len(evidence) else Evidence())
            for i, rs in enumerate(sent)]


def summarise(index: int, window_s: float, sent: Sequence[RequestRecord], output_tokens: int,
              evidence: Evidence = Evidence()) -> Window:
    """Window `index` from the requests sent in it and the output tokens that completed in
    it (the soak counts those as requests finish, so it keeps no request longer than its
    window's)."""
    ok = [r for r in sent if r.ok and r.ttft is not None]
    ttfts = [float(r.ttft) for r in ok if r.ttft is not None]
    tpots = [(r.e2el - r.ttft) / (r.output_tokens - 1) for r in ok
             if r.e2el is not None and r.ttft is not None and r.output_tokens is not None
             and r.output_tokens > 1]
    errors = Counter(r.error_kind or "failed" for r in sent if not r.ok)
    return Window(index=index, start_s=index * window_s, length_s=window_s,
                  requests=len(sent), errors=dict(errors), ttft_p50_s=_p(ttfts, 50),
                  ttft_p99_s=_p(ttfts, 99), tpot_p50_s=_p(tpots, 50),
                  output_tokens=output_tokens, evidence=evidence)
