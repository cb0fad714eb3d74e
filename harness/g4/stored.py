"""A soak's window files into the store (window_files, by run and index), and the stored
windows as G4 judges them: each window as the soak summarised it, with the evidence the
gate measured itself attributed to it (the devices' reads, interpolated between the
gate's samples, and the engine processes it saw change: harness/g4/devices.py,
processes.py), on the gate's clock from the soak's start (`started_at`, already moved
onto this machine's clock for a soak on the client host: harness/remote/soak_client.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.errors import GateError
from harness.g4 import devices as g4_devices
from harness.g4 import engine_clock
from harness.g4.processes import METRIC as ENGINE_CHANGES
from harness.g4.processes import changes_per_window
from harness.g4.spool import window_row
from harness.loadgen.soak_windows import ClientClock, EngineClock, Evidence, Window
from harness.probes.prometheus import MetricsSnapshot, scrape
from harness.serving.disks import DiskSource
from harness.store import Store
from harness.store import windows as store_windows
from harness.store.writer import insert_series, series_of

STORAGE = "g4:device_read_bytes"
ENGINE_SCRAPE_TIMEOUT_S = 3.0
KV_VOLUME = "g4:kv_volume_read_bytes"


def windows(store: Store, run: int, started_at: float, window_s: float, *, storage: bool,
            kv_volume: bool, poll_s: float, ended_at: float | None = None) -> list[Window]:
    """The stored windows with the devices' reads and the engines' own counters
    attributed to each (None where no device of that kind is declared). `ended_at`: when
    the soak's last window ended, once it has (engine_clock.per_window)."""
    stored = store_windows.windows(store, run)
    n = len(stored)
    reads = g4_devices.summed(series_of(store, run, STORAGE), started_at,
                              window_s, n) if storage else None
    vol = g4_devices.summed(series_of(store, run, KV_VOLUME), started_at,
                            window_s, n) if kv_volume else None
    changes = changes_per_window(series_of(store, run, ENGINE_CHANGES), started_at,
                                 window_s, n)
    clocks = engine_clock.per_window({m: series_of(store, run, m) for m in engine_clock.SERIES},
                                     started_at, window_s, n, ended_at=ended_at,
                                     max_gap_s=2 * max(window_s, poll_s))
    sampled = {f"{metric}:{host}": samples for metric in (STORAGE, KV_VOLUME)
               for host, samples in series_of(store, run, metric).items()}
    gaps = g4_devices.spread(sampled, started_at, window_s, n,
                             max_gap_s=2 * max(window_s, poll_s))
    out = []
    for i, row in enumerate(stored):
        ev = Evidence(external_hit_tokens=_hits(row["external_hit_tokens"], clocks[i]),
                      device_read_bytes=reads[i] if reads is not None else None,
                      kv_volume_read_bytes=vol[i] if vol is not None else None,
                      engine_rss_bytes=row["engine_rss_bytes"],
                      engine_restarts=int(row["engine_restarts"] or 0),
                      engine_changes=changes[i], spread_from=gaps[i],
                      engine_clock=clocks[i])
        out.append(Window(index=int(row["idx"]), start_s=float(row["start_s"]),
                          length_s=float(row["length_s"]), requests=int(row["requests"]),
                          errors=dict(row["errors"] or {}),
                          ttft_p50_s=row["ttft_p50_s"], ttft_p99_s=row["ttft_p99_s"],
                          tpot_p50_s=row["tpot_p50_s"],
                          output_tokens=int(row["output_tokens"] or 0), evidence=ev,
                          clock=_client_clock(row["counters"])))
    return out


def _hits(soak: float | None, engines: EngineClock | None) -> float | None:
    """A window's KV-tier hits: the larger of the soak's scrapes and the gate's own. The
    device-share rule holds reads against them, so a soak that under-reports hits (to
    make a few reads look in proportion) gains nothing; one that over-reports fails it."""
    gate = engines.hit_tokens if engines is not None else None
    if soak is None or gate is None:
        return soak if gate is None else gate
    return max(soak, gate)


def _client_clock(counters: Mapping[str, Any] | None) -> ClientClock | None:
    """The soak's requests keyed as the engines count them (None: a soak that did not
    write them, or a window file that says something else)."""
    raw = (counters or {}).get("clock")
    if not isinstance(raw, Mapping):
        return None
    try:
        return ClientClock(first_tokens=int(raw["first_tokens"]),
                           ttft_sum_s=float(raw["ttft_sum_s"]),
                           completed=int(raw["completed"]), ended=int(raw["ended"]))
    except (KeyError, TypeError, ValueError):
        return None


def store_reads(store: Store, run: int, windows: Sequence[Window]) -> None:
    """The attributed device reads onto the stored windows (the report shows them)."""
    rows = [{"idx": w.index, "start_s": w.start_s, "length_s": w.length_s,
             "requests": w.requests,
             "device_read_bytes": w.evidence.device_read_bytes,
             "kv_volume_read_bytes": w.evidence.kv_volume_read_bytes} for w in windows]
    if rows:
        store_windows.upsert_windows(store, run, rows)


def sample_devices(store: Store, run: int, storage: Sequence[DiskSource],
                   kv_volumes: Sequence[DiskSource], event: Callable[..., None],
                   engines: Sequence[str] = ()) -> float:
    """Every declared device counter now, and the counters of the soaked engines
    (`engines`: their base URLs; harness/g4/engine_clock.py), stored (a resumed viewer
    carries on from the last); returns when the sampling began. A host that does not
    answer is an event, not a stop: its windows stay unsampled until it answers again."""
    began = time.time()
    rows = engine_clock.sample(engines, _scrape, event)
    for metric, sources in ((STORAGE, storage), (KV_VOLUME, kv_volumes)):
        for source in sources:
            try:
                asked = time.time()
                value = float(source.bytes_read())
                # the read's middle: an SSH read takes tens of ms, a window may be 1 s
                rows.append({"source": source.host, "metric": metric, "labels": {},
                             "at": (asked + time.time()) / 2, "value": value})
            except (GateError, OSError) as exc:
                event(source="harness", name="G4 device sample", host=source.host,
                      status="failed", message=str(exc)[:500])
    insert_series(store, run, rows)
    return began


def _scrape(url: str) -> MetricsSnapshot:
    # short: the viewer samples at every window edge and must not stall behind an engine
    return scrape(url, timeout=ENGINE_SCRAPE_TIMEOUT_S)


def window_files(store: Store, run_id: int, docs: Sequence[dict[str, Any]]) -> int:
    """Store window files the soak wrote (by run and index: a window pulled twice, or by
    two looks, is stored once); how many were given."""
    rows = [window_row(doc) for doc in docs]
    if rows:
        store_windows.upsert_windows(store, run_id, rows)
    return len(rows)


def last_window(store: Store, run_id: int) -> int:
    """The index of the last window stored, -1 before the first."""
    last = store_windows.last_index(store, run_id)
    return -1 if last is None else last
