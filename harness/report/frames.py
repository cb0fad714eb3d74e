"""One run's rows as the report's frames: read through the store's query functions
(harness.store.queries), shaped here.

The report never queries the database itself: the store is the only door to it. What is
left here is the report's own business: which series metrics it draws (names below,
agreed with the writers), and the dtypes its sections expect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from harness.store import queries
from harness.store import windows as store_windows
from harness.store.db import Store
from harness.store.queries import (
    AttemptInfo,
    CampaignInfo,
    RunInfo,
    campaign_info,
    campaign_run_ids,
    gate_attempts,
    gate_runs,
    run_info,
)

__all__ = ["EVIDENCE_PREFIX", "STORAGE_READ_BYTES", "AttemptInfo",
           "CampaignInfo", "RunFrames", "RunInfo", "campaign_info", "campaign_run_ids",
           "gate_attempts", "gate_runs", "load_run", "run_info"]

# Series metric names the report reads (agreed with the G3 / G4 writers; docs/report.md).
STORAGE_READ_BYTES = "storage_read_bytes"  # cumulative bytes read, one source per host
EVIDENCE_PREFIX = "evidence:"  # evidence:<field>, one value per measured benchmark


@dataclass(frozen=True)
class RunFrames:
    """Everything one run's report section needs, as frames."""

    run: RunInfo
    checks: pd.DataFrame
    signoffs: pd.DataFrame
    facts: pd.DataFrame
    events: pd.DataFrame
    artifacts: pd.DataFrame
    benchmarks: pd.DataFrame
    cells: pd.DataFrame
    series: pd.DataFrame
    requests: pd.DataFrame | None  # None when loaded without requests (trend lookups)
    # G4: the soak's windows (soak_window), by idx; empty for every other run
    windows: pd.DataFrame = field(default_factory=pd.DataFrame)


def _requests(store: Store, run_id: int) -> pd.DataFrame:
    """Non-warm-up requests of the run: benchmark, TTFT, output tokens, failed flag, as
    float / float / bool columns whatever the driver returned (NULLs, ints)."""
    df = queries.run_requests(store, run_id)
    df["ttft"] = pd.to_numeric(df["ttft"], errors="coerce").astype("float64")
    df["output_tokens"] = pd.to_numeric(df["output_tokens"], errors="coerce").astype("float64")
    df["failed"] = df["failed"].astype(bool)
    return df


def load_run(store: Store, run_id: int, *, with_requests: bool = True) -> RunFrames:
    info = run_info(store, run_id)
    t = queries.run_tables(store, run_id, series_metrics=(STORAGE_READ_BYTES,),
                           series_prefixes=(EVIDENCE_PREFIX,))
    requests = _requests(store, run_id) if with_requests else None
    return RunFrames(run=info, checks=t.checks, signoffs=t.signoffs, facts=t.facts,
                     events=t.events, artifacts=t.artifacts, benchmarks=t.benchmarks,
                     cells=t.cells, series=t.series, requests=requests,
                     windows=_windows(store, run_id))


def _windows(store: Store, run_id: int) -> pd.DataFrame:
    """The run's soak windows (a few thousand rows at most: 72 h of 60 s windows), the
    counter columns as floats with NaN where a window was not sampled."""
    df = pd.DataFrame(store_windows.windows(store, run_id))
    if df.empty:
        return df
    for col in ("start_s", "length_s", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s",
                "output_tokens", "external_hit_tokens", "device_read_bytes",
                "kv_volume_read_bytes", "engine_rss_bytes"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    for col in ("requests", "engine_restarts"):
        df[col] = pd.to_numeric(df[col], errors="coerce").fillna(0).astype("int64")
    return df
