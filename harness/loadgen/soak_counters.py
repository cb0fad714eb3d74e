"""The engines' own counters at a window's edges, turned into that window's evidence. Pure.

Per engine instance: the KV-tier hit tokens it counted in the window (the same precedence
as G3's: prompt tokens by source, vLLM's external hits, LMCache's hit tokens), its RSS at
the window's end, and whether it restarted (its process start time moved, or a counter
went down). An engine whose /metrics did not answer at either edge leaves the window's
evidence unsampled (None), which the engaged rule reads as "not engaged", never as fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.probes.prometheus import MetricsSnapshot, cache_evidence

RSS = "process_resident_memory_bytes"
STARTED = "process_start_time_seconds"


def hit_tokens(before: MetricsSnapshot, after: MetricsSnapshot) -> float | None:
    """KV-tier hit tokens between two scrapes of one engine (None: it exposes none)."""
    ev = cache_evidence(before, after)
    found = [v for v in (ev.by_source.get("external_kv_transfer"), ev.external_hits,
                         ev.lmcache_hit_tokens) if v is not None]
    return max(found) if found else None


def restarted(before: MetricsSnapshot, after: MetricsSnapshot) -> bool:
    a, b = after.value(STARTED), before.value(STARTED)
    if a is not None and b is not None and abs(a - b) > 1e-3:
        return True
    return cache_evidence(before, after).counter_reset


def window_counters(before: Sequence[MetricsSnapshot | None],
                    after: Sequence[MetricsSnapshot | None],
                    errors: Sequence[str] = (),
                    last_good: Sequence[MetricsSnapshot | None] = ()) -> dict[str, Any]:
    """One window's evidence from the engines' scrapes at its start and end (index =
    instance; None where the scrape failed, `errors` saying why). `last_good`: each
    engine's last scrape that answered before this window's end, so a restart while
    /metrics was down (a failed scrape at the edge) is still counted once it answers."""
    engines: list[dict[str, Any]] = []
    hits: float | None = 0.0
    rss: float | None = 0.0
    restarts = 0
    if len(before) != len(after):  # zip(strict=) is 3.10+: the agent runs on 3.9
        raise ValueError(f"{len(before)} scrapes before, {len(after)} after")
    for i, (b, a) in enumerate(zip(before, after)):  # noqa: B905 - 3.9
        one: dict[str, Any] = {"instance": i}
        if i < len(errors) and errors[i]:
            one["error"] = errors[i]
        known = last_good[i] if i < len(last_good) else None
        if a is not None and b is None and known is not None and restarted(known, a):
            restarts += 1
            one["restarted"] = True
        if a is None or b is None:
            hits = rss = None
            one["sampled"] = False
            engines.append(one)
            continue
        h = hit_tokens(b, a)
        r = a.value(RSS)
        again = restarted(b, a)
        restarts += again
        one.update(sampled=True, external_hit_tokens=h, rss_bytes=r, restarted=again)
        hits = None if hits is None or h is None else hits + h
        rss = None if rss is None or r is None else rss + r
        engines.append(one)
    return {"external_hit_tokens": hits, "engine_rss_bytes": rss,
            "engine_restarts": restarts, "engines": engines}


def gpu_cache_tokens(snap: MetricsSnapshot) -> int | None:
    """The engine's GPU KV cache in tokens, as vLLM's cache_config_info labels say it
    (kv_cache_size_tokens, else num_gpu_blocks x block_size); None when not exported."""
    for sample in snap.samples:
        if sample.name != "vllm:cache_config_info":
            continue
        labels = dict(sample.labels)
        tokens = labels.get("kv_cache_size_tokens", "")
        if tokens.isdigit():
            return int(tokens)
        blocks, size = labels.get("num_gpu_blocks", ""), labels.get("block_size", "")
        if blocks.isdigit() and size.isdigit():
            return int(blocks) * int(size)
    return None
