"""The accelerator's device reads per soak window, from the viewer's samples. Pure.

The soak's own process cannot be the one to read the devices: at `placement: client` it
runs on a host the vendor controls, and the storage hosts are the vendor's too. The gate
reads them over its own transport (harness/serving/disks.py), as G3 does, whenever it is
attached: each sample is a cumulative read counter with its time, stored as it is taken,
so a resumed viewer carries on from the last one. A window's reads are the counter's
rise between its two edges, the counter interpolated linearly between samples: while the
viewer is attached (a sample every few seconds) that is the window's own; across a time
the viewer was away, the reads are spread evenly over the windows of the gap (each gets
the gap's average, never more than was read). A window outside the samples is not
sampled (None), which the engaged rule reads as not engaged.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence

Sample = tuple[float, float]  # (epoch s, cumulative bytes read)


def at(samples: Sequence[Sample], t: float) -> float | None:
    """The cumulative counter at `t`, interpolated; None outside the samples' span."""
    if not samples or t < samples[0][0] or t > samples[-1][0]:
        return None
    i = bisect.bisect_left(samples, (t, float("-inf")))
    if samples[i][0] == t:
        return samples[i][1]
    (t0, v0), (t1, v1) = samples[i - 1], samples[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def per_window(samples: Sequence[Sample], started_at: float, window_s: float,
               windows: int) -> list[float | None]:
    """Bytes read in each window of one source (None: not covered by samples, or the
    counter went down within it: the host rebooted, its reads are unknown)."""
    ordered = sorted(samples)
    out: list[float | None] = []
    for k in range(windows):
        a = at(ordered, started_at + k * window_s)
        b = at(ordered, started_at + (k + 1) * window_s)
        out.append(b - a if a is not None and b is not None and b >= a else None)
    return out


def summed(by_source: Mapping[str, Sequence[Sample]], started_at: float, window_s: float,
           windows: int) -> list[float | None] | None:
    """Every source's reads per window, summed (a window any source did not cover is
    None); None when there is no source at all (nothing declared to read)."""
    if not by_source:
        return None
    total: list[float | None] = [0.0] * windows
    for samples in by_source.values():
        for k, v in enumerate(per_window(samples, started_at, window_s, windows)):
            t = total[k]
            total[k] = None if t is None or v is None else t + v
    return total


def spread(by_source: Mapping[str, Sequence[Sample]], started_at: float, window_s: float,
           windows: int, max_gap_s: float) -> list[int | None]:
    """Which windows share reads spread over a sampling gap: for each window, None when
    every source was sampled around it (no two consecutive samples more than `max_gap_s`
    apart across it), else the index of the first window of its run of gap windows.

    Why: a gap's reads are spread evenly over its windows, while the tier's hits in each
    are the engine's own; held window by window, a window with more hits than the gap's
    average would look not engaged because of how the reads were attributed, not because
    of what the devices did. The engaged rule judges such a run as one (criteria.py)."""
    gap = [False] * windows
    for samples in by_source.values():
        ordered = sorted(samples)
        for (t0, _), (t1, _) in itertools.pairwise(ordered):
            if t1 - t0 <= max_gap_s:
                continue
            first = max(0, int((t0 - started_at) // window_s))
            last = min(windows - 1, int((t1 - started_at) // window_s))
            for k in range(first, last + 1):
                gap[k] = True
    out: list[int | None] = []
    for k, inside in enumerate(gap):
        out.append(None if not inside else (out[-1] if k and out[-1] is not None else k))
    return out


def edge_since(started_at: float, window_s: float, since: float, now: float) -> float | None:
    """The latest window edge (epoch) passed after `since`, or None: the viewer samples
    the devices just after each edge, so each window's reads are measured, not spread."""
    if not started_at or now < started_at:
        return None
    edge = started_at + math.floor((now - started_at) / window_s) * window_s
    return edge if edge > since else None


def next_edge(started_at: float, window_s: float, now: float) -> float | None:
    """The next window edge (epoch) after `now`; None before the soak's start is known."""
    if not started_at or now < started_at:
        return None
    return started_at + (math.floor((now - started_at) / window_s) + 1) * window_s
