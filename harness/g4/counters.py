"""The engines' own counters at a window's edges, turned into that window's evidence: in
harness/loadgen/soak_counters.py, where the load agent can ship it (the soak scrapes the
engines from the client host with `placement: client`)."""

from harness.loadgen.soak_counters import (
    RSS,
    STARTED,
    gpu_cache_tokens,
    hit_tokens,
    restarted,
    window_counters,
)

__all__ = ["RSS", "STARTED", "gpu_cache_tokens", "hit_tokens", "restarted",
           "window_counters"]
