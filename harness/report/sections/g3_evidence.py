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

from harness.report import fmt, plots, simtime
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


# A storage rate spans at least this much of a phase (harness.report.sections.g3_evidence
# storage_rates says why).
MIN_RATE_S = 1.0

# Phases a resume replaced (the unfinished pair is measured again) are kept in the store
# for the record and left out of every figure.
REPLACED = ("SUPERSEDED", "INTERRUPTED")


def measured(frames: RunFrames) -> pd.DataFrame:
    bm = frames.benchmarks
    if bm.empty:
        return bm
    return bm[(bm["phase"] == "measured") & ~bm["status"].isin(REPLACED)]


def _owners(samples: pd.DataFrame, bm: pd.DataFrame) -> pd.Series:
    """Each sample's benchmark: the one it names, else the measured one whose time span
    holds it (NaN: none)."""
    owner = samples["benchmark_id"]
    spans = bm[["id", "started_at", "duration"]].dropna().sort_values("started_at")
    if owner.isna().any() and not spans.empty:
        starts = spans["started_at"].to_numpy(dtype=float)
        ends = starts + spans["duration"].to_numpy(dtype=float)
        at = samples["at"].to_numpy(dtype=float)
        idx = np.searchsorted(starts, at, side="right") - 1
        safe = idx.clip(min=0)
        inside = (idx >= 0) & (at <= ends[safe])
        found = np.where(inside, spans["id"].to_numpy(dtype=float)[safe], np.nan)
        owner = owner.fillna(pd.Series(found, index=samples.index))
    return owner


def _windows(at: np.ndarray, value: np.ndarray) -> list[tuple[float, float, float]]:
    """(end, seconds, bytes) of consecutive spans of one source in one phase, each at
    least MIN_RATE_S long (a shorter rest joins the span before it; a phase shorter than
    that is one span: its mean). A counter that went down is a reset: that step counts
    neither its bytes nor its time."""
    out: list[tuple[float, float, float]] = []
    secs = nbytes = 0.0
    for i in range(1, at.size):
        dt, dv = at[i] - at[i - 1], value[i] - value[i - 1]
        if dt <= 0 or dv < 0:
            continue
        secs, nbytes = secs + dt, nbytes + dv
        if secs >= MIN_RATE_S:
            out.append((float(at[i]), secs, nbytes))
            secs = nbytes = 0.0
    if secs > 0:  # the rest of the phase
        if out:
            _, s0, b0 = out.pop()
            out.append((float(at[-1]), s0 + secs, b0 + nbytes))
        else:
            out.append((float(at[-1]), secs, nbytes))
    return out


def storage_rates(frames: RunFrames, factor: float | None = None) -> pd.DataFrame:
    """One row per rate inside a measured phase: benchmark, source, at (its end),
    seconds, gbps. Each rate spans at least MIN_RATE_S of one source's samples in one
    phase: a sampler's last read can come milliseconds after the one before, and a
    device (or the simulated tier, flushing every 0.25 s) counts in bursts, so rates
    over shorter spans are artefacts (0 or 600 GB/s), not bandwidth. At a simulator
    speed `factor` the rates are the model's (divided by it, harness.report.simtime)."""
    s = frames.series
    bm = measured(frames)
    if s.empty or bm.empty:
        return pd.DataFrame()
    raw = s[s["metric"] == STORAGE_READ_BYTES]
    if raw.empty:
        return pd.DataFrame()
    raw = raw.assign(benchmark_id=_owners(raw, bm))
    raw = raw[raw["benchmark_id"].isin(bm["id"])].sort_values(["source", "at"])
    rows = []
    for (source, bench), part in raw.groupby(["source", "benchmark_id"], sort=True):
        for end, secs, nbytes in _windows(part["at"].to_numpy(dtype=float),
                                          part["value"].to_numpy(dtype=float)):
            rows.append({"benchmark_id": bench, "source": source, "at": end,
                         "seconds": secs, "gbps": nbytes / secs / 1e9 / (factor or 1.0)})
    if not rows:
        return pd.DataFrame()
    rates = pd.DataFrame(rows)
    return rates.join(bm.set_index("id")[["arm", "layout", "tier"]], on="benchmark_id")


def storage_table(rates: pd.DataFrame, ctx: Context, modelled: bool = False) -> Table:
    """p50 and max of the rates per layout x tier x arm x source (`modelled`: a simulated
    run's, in the model's GB/s, and headed so)."""
    t = ctx.t
    g = rates.groupby(["layout", "tier", "arm", "source"], sort=True)["gbps"]
    agg = pd.DataFrame({"p50": g.median(), "max": g.max(), "n": g.size()}).reset_index()
    rows = [[str(r.layout), str(r.tier), t(f"arm.{r.arm}") if r.arm in ("baseline",
             "accelerated") else str(r.arm), str(r.source), fmt.gbps(r.p50), fmt.gbps(r.max),
             fmt.number(r.n)] for r in agg.itertuples(index=False)]
    model = "_model" if modelled else ""
    return Table(columns=[t("col.layout"), t("col.tier"), t("col.arm"), t("col.source"),
                          t(f"col.gbps_p50{model}"), t(f"col.gbps_max{model}"),
                          t("col.rates")], rows=rows)


def storage_plot(frames: RunFrames, rates: pd.DataFrame, ctx: Context,
                 factor: float | None = None) -> Plot:
    """GB/s summed over hosts (each source's rates over >= 1 s, put in the second they
    end in) against minutes since the run started; at a simulator speed `factor`, the
    model's GB/s (`rates` are already)."""
    t = ctx.t
    t0 = frames.run.started_at
    series, colours = {}, {}
    for arm, part in rates.groupby("arm", sort=True):
        sec = np.floor(part["at"].to_numpy(dtype=float))
        summed = pd.Series(part["gbps"].to_numpy(dtype=float)).groupby(sec).sum()
        x = (summed.index.to_numpy(dtype=float) - t0) / 60.0
        label = t(f"arm.{arm}") if arm in ("baseline", "accelerated") else str(arm)
        series[label] = _with_gaps(x, summed.to_numpy(dtype=float), gap=5.0 / 60.0)
        if str(arm) in plots.ARM_COLOURS:  # one colour per arm in every language
            colours[label] = plots.ARM_COLOURS[str(arm)]
    modelled = factor is not None
    uri = plots.lines(ctx.fonts, series, xlabel=t("plot.minutes"),
                      ylabel=t("plot.gbps_model") if modelled else "GB/s", colours=colours)
    caption = (t("plot.storage_caption_model", {"speed": f"{factor:g}"}) if modelled
               else t("plot.storage_caption"))
    return Plot(title=t("plot.storage"), data_uri=uri, caption=caption)


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
    cols = [t("col.layout"), t("col.tier"), t("col.arm"), *(_counter(t, f) for f in fields)]
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
    factor = simtime.speed(frames)  # a simulated run: the model's means beneath
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
                     _means(col(g, "client_ttft_mean_s"), col(g, "server_ttft_mean_s"),
                            factor, t),
                     _means(col(g, "client_e2e_mean_s"), col(g, "server_e2e_mean_s"),
                            factor, t)])
    return Table(columns=[t("col.layout"), t("col.tier"), t("col.arm"),
                          t("col.device_reads_both" if both else "col.device_reads"),
                          t("col.of_cold_kv"), t("col.requests_engine_gate"),
                          t("col.ttft_client_engine"), t("col.e2e_client_engine")],
                 rows=rows)


def _means(client: pd.Series, server: pd.Series, factor: float | None = None,
           t: Translator | None = None) -> str:
    """"client / engine" means; at a simulator speed, the model's beneath."""
    a, b = _f(client.mean()), _f(server.mean())
    shown = f"{fmt.seconds(a)} / {fmt.seconds(b)}"
    if factor is None or t is None or (a is None and b is None):
        return shown
    model = [fmt.seconds(None if x is None else x * factor).removesuffix(" s") for x in (a, b)]
    return shown + "\n" + t("sim.model", {"value": " / ".join(model)})


def _f(v: object) -> float | None:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if np.isnan(x) else x


def _arm_word(t: Translator, arm: str) -> str:
    return t(f"arm.{arm}") if arm in ("baseline", "accelerated") else arm


def _counter(t: Translator, field: str) -> str:
    """A counter's column header in words (`external_hit_tokens` cannot wrap, words can)."""
    key = f"col.counter.{field}"
    return t(key) if key in t.messages else field.replace("_", " ")
