"""The engines' own clock over a soak, read by the gate itself: G3's two clocks, window by
window.

Why: with `load.placement: client` the soak runs on a host the vendor controls, and its
window files sit there until the gate pulls them: a window that says TTFT stayed flat, or
that the tier kept hitting, is the vendor's word. The engines count for themselves (vLLM's
and SGLang's TTFT and e2e histograms, their generation-token and KV-tier hit counters),
so the gate scrapes each instance's /metrics over its own connection whenever it samples
the devices (just after each window edge, and every quarter window), stores the
cumulative values as series, and reads each window's rise between its edges as it reads
the devices' (harness/g4/devices.py). The criteria then judge TTFT and throughput drift
on both clocks (the worse counts), and `engine_clock` holds the soak's windows against
the engines' counts (harness/g4/clock_check.py).

The pure functions take scrapes and stored series; `sample` is the one that scrapes.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.errors import GateError
from harness.g4 import devices as g4_devices
from harness.loadgen.soak_counters import hit_tokens
from harness.loadgen.soak_windows import EngineClock
from harness.probes.prometheus import (
    GENERATION_TOKENS,
    SERVER_E2E,
    SERVER_TTFT,
    MetricsSnapshot,
)

TTFT_SUM = "g4:engine_ttft_sum_s"
TTFT_COUNT = "g4:engine_ttft_count"
REQUESTS = "g4:engine_requests"
GENERATED = "g4:engine_generation_tokens"
HITS = "g4:engine_hit_tokens"
SERIES = (TTFT_SUM, TTFT_COUNT, REQUESTS, GENERATED, HITS)
# An empty scrape: a counter's value is its rise from nothing (prometheus._delta).
_NOTHING = MetricsSnapshot(samples=())


def _histogram(snap: MetricsSnapshot, families: Sequence[str]) -> tuple[float, float] | None:
    """(sum, count) of the first family the engine exposes both of."""
    for family in families:
        total, count = snap.value(f"{family}_sum"), snap.value(f"{family}_count")
        if total is not None and count is not None:
            return total, count
    return None


def readings(snap: MetricsSnapshot) -> dict[str, float]:
    """The cumulative counters of one scrape the engine exposes, by series name."""
    out: dict[str, float] = {}
    ttft = _histogram(snap, SERVER_TTFT)
    if ttft is not None:
        out[TTFT_SUM], out[TTFT_COUNT] = ttft
    e2e = _histogram(snap, SERVER_E2E)
    if e2e is not None:
        out[REQUESTS] = e2e[1]
    name = snap.first(GENERATION_TOKENS)
    generated = snap.value(name) if name else None
    if generated is not None:
        out[GENERATED] = generated
    hits = hit_tokens(_NOTHING, snap)
    if hits is not None:
        out[HITS] = hits
    return out


def sample(urls: Sequence[str], scrape: Callable[[str], MetricsSnapshot],
           event: Callable[..., None]) -> list[dict[str, Any]]:
    """Every engine's counters now, as series rows (source: the engine's base URL), each
    stamped with the middle of its own scrape. An engine that does not answer is an
    event: its windows stay unsampled until it answers again."""
    rows: list[dict[str, Any]] = []
    for url in urls:
        asked = time.time()
        try:
            snap = scrape(url)
        except (GateError, OSError) as exc:
            event(source="harness", name="G4 engine scrape", host=None, status="failed",
                  message=f"{url}: {exc}"[:500])
            continue
        at = (asked + time.time()) / 2
        rows.extend({"source": url, "metric": metric, "labels": {}, "at": at,
                     "value": value} for metric, value in readings(snap).items())
    return rows


def _until_the_end(samples: Sequence[g4_devices.Sample],
                   ended_at: float | None) -> list[g4_devices.Sample]:
    """One engine's samples, with the soak's end put in a gap that spans it: a viewer
    that came back after the soak ended (a closed laptop) read the whole rest of the
    soak's traffic at its return; spread evenly up to its return, it would thin every
    window of the gap by the idle time after the end."""
    ordered = sorted(samples)
    if ended_at is None:
        return ordered
    for (t0, _), (t1, v1) in itertools.pairwise(ordered):
        if t0 < ended_at < t1:
            return sorted([*ordered, (ended_at, v1)])
    return ordered


def per_window(series: Mapping[str, Mapping[str, Sequence[g4_devices.Sample]]],
               started_at: float, window_s: float, windows: int, *,
               max_gap_s: float, ended_at: float | None = None) -> list[EngineClock | None]:
    """Each window's rise of every series, summed over the engines (a window some engine
    did not cover is None for that series), and which windows share a sampling gap
    (`max_gap_s`, as the devices'); None for every window when the gate never scraped an
    engine (a run stored before it did). `ended_at`: when the soak's last window ended,
    once it has."""
    if not any(series.get(m) for m in SERIES):
        return [None] * windows
    clipped = {m: {src: _until_the_end(samples, ended_at)
                   for src, samples in (series.get(m) or {}).items()} for m in SERIES}
    rises = {m: g4_devices.summed(clipped[m], started_at, window_s, windows) for m in SERIES}
    gaps = g4_devices.spread(clipped[TTFT_COUNT] or clipped[REQUESTS], started_at,
                             window_s, windows, max_gap_s)

    def at(metric: str, k: int) -> float | None:
        values = rises[metric]
        return values[k] if values is not None else None

    return [EngineClock(ttft_sum_s=at(TTFT_SUM, k), ttft_count=at(TTFT_COUNT, k),
                        requests=at(REQUESTS, k), generation_tokens=at(GENERATED, k),
                        hit_tokens=at(HITS, k), spread_from=gaps[k]) for k in range(windows)]
