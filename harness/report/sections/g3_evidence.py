"""G3 evidence: storage read bandwidth and cache-hit counters over the measured phases.

Storage: series `storage_read_bytes` hold cumulative bytes read per source host; rates are
the differences between consecutive samples of one source (a counter that goes down is a
reset and that step is dropped). Evidence: series `evidence:<field>` hold one value per
measured benchmark (a /metrics delta such as external_hit_tokens); they are summed per
layout x tier x arm.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.report import fmt, plots
from harness.report.frames import EVIDENCE_PREFIX, STORAGE_READ_BYTES, RunFrames
from harness.report.i18n import Translator
from harness.report.model import Plot, Table
from harness.report.sections.base import Context

MAX_WIDE_FIELDS = 5
# The counters shown, in this order, when present (names as harness.g3.evidence writes them).
PREFERRED = ("prompt_tokens", "external_hit_tokens", "external_hits", "lmcache_hit_tokens",
             "prefix_hits")
FLAGS = ("exposes_external",)
# Evidence fields the cross-checks table shows (means, counts of requests, device bytes):
# never summed into the cache-hit table.
CROSSCHECK = ("device_bytes_read", "kv_volume_bytes_read", "cold_kv_tokens",
              "kv_bytes_per_token", "kv_compression",
              "server_ttft_mean_s", "client_ttft_mean_s", "server_e2e_mean_s",
              "client_e2e_mean_s", "engine_requests", "engine_prompt_tokens", "client_sent",
              "client_completed", "client_prompt_tokens")


# Phases a resume replaced (the unfinished pair is measured again) are kept in the store
# for the record and left out of every figure.
REPLACED = ("SUPERSEDED", "INTERRUPTED")


def measured(frames: RunFrames) -> pd.DataFrame:
    bm = frames.benchmarks
    if bm.empty:
        return bm
    return bm[(bm["phase"] == "measured") & ~bm["status"].isin(REPLACED)]


def storage_rates(frames: RunFrames) -> pd.DataFrame:
    """One row per rate sample inside a measured phase: benchmark, source, at, gbps."""
    s = frames.series
    bm = measured(frames)
    if s.empty or bm.empty:
        return pd.DataFrame()
    raw = s[s["metric"] == STORAGE_READ_BYTES].sort_values(["source", "at"])
    if raw.empty:
        return pd.DataFrame()
    dv = raw.groupby("source")["value"].diff()
    dt = raw.groupby("source")["at"].diff()
    rates = raw.assign(gbps=dv / dt / 1e9)
    rates = rates[(dt > 0) & (dv >= 0)]
    # A sample belongs to the measured benchmark it names, or whose time span holds it.
    spans = bm[["id", "started_at", "duration"]].dropna().sort_values("started_at")
    if rates["benchmark_id"].isna().any() and not spans.empty:
        starts = spans["started_at"].to_numpy(dtype=float)
        ends = starts + spans["duration"].to_numpy(dtype=float)
        at = rates["at"].to_numpy(dtype=float)
        idx = np.searchsorted(starts, at, side="right") - 1
        safe = idx.clip(min=0)
        inside = (idx >= 0) & (at <= ends[safe])
        owner = np.where(inside, spans["id"].to_numpy(dtype=float)[safe], np.nan)
        rates = rates.assign(benchmark_id=rates["benchmark_id"].fillna(
            pd.Series(owner, index=rates.index)))
    rates = rates[rates["benchmark_id"].isin(bm["id"])]
    return rates.join(bm.set_index("id")[["arm", "layout", "tier"]], on="benchmark_id")


def storage_table(rates: pd.DataFrame, ctx: Context) -> Table:
    t = ctx.t
    g = rates.groupby(["layout", "tier", "arm", "source"], sort=True)["gbps"]
    agg = pd.DataFrame({"p50": g.median(), "max": g.max(), "n": g.size()}).reset_index()
    rows = [[str(r.layout), str(r.tier), t(f"arm.{r.arm}") if r.arm in ("baseline",
             "accelerated") else str(r.arm), str(r.source), fmt.gbps(r.p50), fmt.gbps(r.max),
             fmt.number(r.n)] for r in agg.itertuples(index=False)]
    return Table(columns=[t("col.layout"), t("col.tier"), t("col.arm"), t("col.source"),
                          t("col.gbps_p50"), t("col.gbps_max"), t("col.samples")], rows=rows)


def storage_plot(frames: RunFrames, rates: pd.DataFrame, ctx: Context) -> Plot:
    """GB/s summed over hosts (per second) against minutes since the run started."""
    t = ctx.t
    t0 = frames.run.started_at
    series = {}
    for arm, part in rates.groupby("arm", sort=True):
        sec = np.floor(part["at"].to_numpy(dtype=float))
        summed = pd.Series(part["gbps"].to_numpy(dtype=float)).groupby(sec).sum()
        x = (summed.index.to_numpy(dtype=float) - t0) / 60.0
        label = t(f"arm.{arm}") if arm in ("baseline", "accelerated") else str(arm)
        series[label] = _with_gaps(x, summed.to_numpy(dtype=float), gap=5.0 / 60.0)
    uri = plots.lines(ctx.fonts, series, xlabel=t("plot.minutes"), ylabel="GB/s")
    return Plot(title=t("plot.storage"), data_uri=uri, caption=t("plot.storage_caption"))


def _with_gaps(x: np.ndarray, y: np.ndarray, gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Break the line between phases (NaN where samples are more than `gap` apart)."""
    cut = np.flatnonzero(np.diff(x) > gap) + 1
    if cut.size == 0:
        return x, y
    return np.insert(x, cut, np.nan), np.insert(y, cut, np.nan)


def evidence_table(frames: RunFrames, ctx: Context) -> Table | None:
    """Counters summed per layout x tier x arm over the measured repetitions.

    Token counters are summed; `*_share` fields and flags are not (a share is recomputed
    from the sums: external hit tokens / prompt tokens).
    """
    s = frames.series
    bm = measured(frames)
    if s.empty or bm.empty:
        return None
    ev = s[s["metric"].str.startswith(EVIDENCE_PREFIX) & s["benchmark_id"].isin(bm["id"])]
    if ev.empty:
        return None
    t = ctx.t
    ev = ev.assign(field=ev["metric"].str.slice(len(EVIDENCE_PREFIX))).join(
        bm.set_index("id")[["arm", "layout", "tier"]], on="benchmark_id")
    counters = ev[~ev["field"].str.endswith("_share") & ~ev["field"].isin(FLAGS)
                  & ~ev["field"].isin(CROSSCHECK)]
    wide = counters.groupby(["layout", "tier", "arm", "field"], sort=True)["value"].sum(
    ).unstack("field")
    present = [str(f) for f in wide.columns]
    fields = [f for f in PREFERRED if f in present] or present[:MAX_WIDE_FIELDS]
    hits = next((f for f in ("external_hit_tokens", "external_hits", "lmcache_hit_tokens")
                 if f in present), None)
    # Counter names as words: `external_hit_tokens` cannot wrap, "external hit tokens" can.
    cols = [t("col.layout"), t("col.tier"), t("col.arm"), *(f.replace("_", " ") for f in fields)]
    share = None
    if hits is not None and "prompt_tokens" in present:
        share = wide[hits] / wide["prompt_tokens"].where(wide["prompt_tokens"] > 0)
        cols.append(t("col.external_share"))
    rows = []
    for i, (key, row) in enumerate(wide.iterrows()):
        layout, tier, arm = key
        cells = [str(layout), str(tier), _arm_word(t, str(arm)),
                 *[fmt.number(row[f]) for f in fields]]
        if share is not None:
            cells.append(fmt.pct(float(share.iloc[i])))
        rows.append(cells)
    return Table(columns=cols, rows=rows)


def crosscheck_table(frames: RunFrames, ctx: Context) -> Table | None:
    """What G3 held the vendor-controlled parts against, per layout x tier x arm over the
    measured repetitions (docs/g3.md): the accelerator's devices' reads against the cold
    KV the accelerated arm recovered, the requests the engines counted against those the
    gate sent, and the two clocks' mean TTFT and e2e (client / engine). None for runs
    stored before these were recorded."""
    s = frames.series
    bm = measured(frames)
    if s.empty or bm.empty:
        return None
    names = [EVIDENCE_PREFIX + f for f in CROSSCHECK]
    ev = s[s["metric"].isin(names) & s["benchmark_id"].isin(bm["id"])]
    if ev.empty:
        return None
    t = ctx.t
    ev = ev.assign(field=ev["metric"].str.slice(len(EVIDENCE_PREFIX))).join(
        bm.set_index("id")[["arm", "layout", "tier"]], on="benchmark_id")
    wide = ev.pivot_table(index=["layout", "tier", "arm", "benchmark_id"], columns="field",
                          values="value", aggfunc="first")

    def col(frame: pd.DataFrame, name: str) -> pd.Series:
        return frame[name] if name in frame else pd.Series(np.nan, index=frame.index)

    both = "kv_volume_bytes_read" in wide  # the GPU hosts' KV volume was read too
    rows = []
    for (layout, tier, arm), g in wide.groupby(level=["layout", "tier", "arm"], sort=True):
        read = float(col(g, "device_bytes_read").sum())
        reads = f"{read / 1e9:.2f} GB"
        if both:  # storage hosts / GPU hosts; the share is the end that read least
            gpu = float(col(g, "kv_volume_bytes_read").sum())
            reads, read = f"{read / 1e9:.2f} / {gpu / 1e9:.2f} GB", min(read, gpu)
        cold = float((col(g, "cold_kv_tokens") * col(g, "kv_bytes_per_token")
                      / col(g, "kv_compression").fillna(1.0)).sum())
        share = fmt.pct(read / cold) if arm == "accelerated" and cold > 0 else fmt.dash()
        seen, sent = col(g, "engine_requests").sum(min_count=1), col(g, "client_sent").sum()

        rows.append([str(layout), str(tier), _arm_word(t, str(arm)), reads, share,
                     f"{fmt.number(_f(seen))} / {fmt.number(_f(sent))}",
                     _means(col(g, "client_ttft_mean_s"), col(g, "server_ttft_mean_s")),
                     _means(col(g, "client_e2e_mean_s"), col(g, "server_e2e_mean_s"))])
    return Table(columns=[t("col.layout"), t("col.tier"), t("col.arm"),
                          t("col.device_reads_both" if both else "col.device_reads"),
                          t("col.of_cold_kv"), t("col.requests_engine_gate"),
                          t("col.ttft_client_engine"), t("col.e2e_client_engine")],
                 rows=rows)


def _means(client: pd.Series, server: pd.Series) -> str:
    return f"{fmt.seconds(_f(client.mean()))} / {fmt.seconds(_f(server.mean()))}"


def _f(v: object) -> float | None:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if np.isnan(x) else x


def _arm_word(t: Translator, arm: str) -> str:
    return t(f"arm.{arm}") if arm in ("baseline", "accelerated") else arm
