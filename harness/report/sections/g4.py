"""G4's section: the soak of the accelerated arm, judged window by window (docs/g4.md).

The checks as the generic section shows them (its builder, reused), then the criteria as
the gate judged them (its stored `test_criterion[...]` check rows, said through their
reason codes), the windows' totals, and the windows the store holds (`soak_window`, one
row per window) drawn as one figure of stacked panels sharing the soak's time axis. The
report never judges a window again: it draws what was stored, and marks on it what the
criteria read (the baseline, the engaged share, failed and restarted windows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.config.models import G4 as G4Config
from harness.config.models import G4Criteria, parse_duration
from harness.report import checkwords, fmt, plots, simtime
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Plot, Table
from harness.report.sections import generic
from harness.report.sections.base import (
    Context,
    Contribution,
    SectionBuilder,
    TrendMetric,
    expected_words,
    measured_words,
    message_words,
    outcome_word,
    so_far,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

CRITERION = "::test_criterion["
# One colour per quantity across the panels (plots.py: orange means the accelerated arm,
# slate the baseline arm; every window here is the accelerated arm's, so neither is used).
TTFT_COLOUR = "#2f6db5"
THROUGHPUT_COLOUR = "#3a9a5b"
RSS_COLOUR = "#7a5bb5"
HITS_COLOUR = "#1f8a8a"
READS_COLOUR = "#8c6d31"
LIMIT_COLOUR = "#b5161b"  # the criteria's lines and what missed them (plots.py's threshold red)
BASELINE_SPAN = "#9aa5b1"  # the soak's baseline period: not the baseline arm's slate
UNSAMPLED_COLOUR = "#8a8a8a"
MAX_RESTART_LINES = 50


@dataclass(frozen=True)
class Soak:
    """What the figure marks from the run's stored config (gates.g4), else the defaults."""

    baseline_s: float
    min_engaged_share: float


def soak_settings(config: dict[str, Any]) -> Soak:
    """gates.g4.baseline and criteria.min_engaged_share as the run stored them; each one
    unreadable (an old run, a config without gates.g4) is its default."""
    raw = ((config or {}).get("gates") or {}).get("g4")
    raw = raw if isinstance(raw, dict) else {}
    crit = raw.get("criteria")
    crit = crit if isinstance(crit, dict) else {}
    try:  # seconds, or text with a unit ("1h") as gate.yaml allows
        baseline = parse_duration(raw.get("baseline"))
    except ValueError:
        baseline = None
    share = _float(crit.get("min_engaged_share"))
    base = _float(baseline)
    return Soak(baseline_s=base if base is not None and 0 < base < math.inf
                else G4Config().baseline,
                min_engaged_share=share if share is not None and 0 <= share <= 1
                else G4Criteria().min_engaged_share)


def _float(value: object) -> float | None:
    """A stored number (never a boolean), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def span_words(seconds: float) -> str:
    """A length as people say it: 60 s, 5 min, 1 h, 72 h (units are the same in every
    language); below two minutes in seconds, else in its largest whole unit."""
    if not math.isfinite(seconds):
        return fmt.dash()
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds >= 3600 and (seconds / 3600).is_integer():
        return f"{seconds / 3600:g} h"
    if (seconds / 60).is_integer():
        return f"{seconds / 60:g} min"
    return f"{seconds / 60:.3g} min" if seconds < 7200 else f"{seconds / 3600:.3g} h"


def failed_counts(windows: pd.DataFrame) -> np.ndarray:
    """Failed requests per window: its errors by kind, summed."""
    def total(errors: object) -> int:
        if not isinstance(errors, dict):
            return 0
        return sum(int(v) for v in errors.values() if isinstance(v, int | float))
    return np.array([total(e) for e in windows["errors"]], dtype=float)


def _col(windows: pd.DataFrame, name: str) -> np.ndarray:
    """A window column as floats, NaN where a window has none (not sampled)."""
    if name not in windows:
        return np.full(len(windows), np.nan)
    values: np.ndarray = pd.to_numeric(windows[name], errors="coerce").to_numpy(dtype=float)
    return values


def time_axis(extent_s: float) -> tuple[float, str]:
    """Seconds per unit of the x axis and its label key, by the soak's length: seconds for a
    demo's soak, minutes up to two hours, else hours."""
    if extent_s < 120:
        return 1.0, "g4.x_seconds"
    if extent_s < 7200:
        return 60.0, "g4.x_minutes"
    return 3600.0, "g4.x_hours"


def baseline_share(values: np.ndarray, in_baseline: np.ndarray) -> np.ndarray | None:
    """Each window's value as a share of the baseline's mean per window (an unsampled
    baseline window counts 0, as the engaged rule counts it); None without a level."""
    if not in_baseline.any():
        return None
    level = float(np.nan_to_num(values[in_baseline], nan=0.0).mean())
    if not level > 0:
        return None
    return values / level


def _line(ax: Axes, x: np.ndarray, y: np.ndarray, label: str, colour: str,
          style: str = "-", width: float = 1.1) -> None:
    """As plots.lines draws one series: bucket means with a min / max band when long."""
    xs, mean, lo, hi = plots.downsample(x, y)
    if xs.size != x.size:
        ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, linewidth=0)
    ax.plot(xs, mean, label=label, color=colour, linewidth=width, linestyle=style,
            marker="o" if xs.size < 30 else None, markersize=3)


def windows_plot(windows: pd.DataFrame, soak: Soak, ctx: Context,
                 factor: float | None = None) -> Plot:
    """One figure, four panels sharing the time axis: TTFT p50 / p99, throughput, engine
    RSS, and the accelerator's evidence as a share of the baseline's level. At a simulator
    speed `factor`, TTFT and throughput in the model's units (the time axis stays the
    soak's own clock)."""
    t = ctx.t
    f = factor or 1.0

    def unit(label: str) -> str:
        return t("sim.axis_model", {"label": label}) if factor is not None else label

    start, length = _col(windows, "start_s"), _col(windows, "length_s")
    mid = start + length / 2
    extent = float(np.nanmax(start + length))
    scale, xlabel = time_axis(extent)
    x = mid / scale
    p50, p99 = _col(windows, "ttft_p50_s") * f, _col(windows, "ttft_p99_s") * f
    top = np.nanmax(np.concatenate([p50, p99])) if np.isfinite(p50).any() or \
        np.isfinite(p99).any() else np.nan
    ms = bool(np.isfinite(top) and top < 1.0)  # a demo's 12 ms read as 0.012 s otherwise
    k = 1000.0 if ms else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        throughput = _col(windows, "output_tokens") / np.where(length > 0, length, np.nan) / f
    rss = _col(windows, "engine_rss_bytes")
    rss_gb = bool(np.isfinite(rss).any() and np.nanmax(rss) >= 1e9)
    rss = rss / (1e9 if rss_gb else 1e6)
    in_base = mid < soak.baseline_s
    hits, reads = _col(windows, "external_hit_tokens"), _col(windows, "device_read_bytes")
    hit_share, read_share = baseline_share(hits, in_base), baseline_share(reads, in_base)
    failed = failed_counts(windows)
    restarts = _col(windows, "engine_restarts") > 0
    unsampled = ~np.isfinite(hits) | ~np.isfinite(reads)

    with plots._canvas(ctx.fonts, 6.6, 7.6) as (fig, (first,), out):
        fig.delaxes(first)  # the shared canvas makes one axes; this figure stacks four
        axes = list(fig.subplots(4, 1, sharex=True))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.95, bottom=0.07, hspace=0.32)
        for ax in axes:
            ax.grid(True, color="#dddddd", linewidth=0.6)
            ax.set_axisbelow(True)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
            ax.axvspan(0, min(soak.baseline_s, extent) / scale, color=BASELINE_SPAN,
                       alpha=0.22, linewidth=0,
                       label=t("g4.plot_baseline", {"span": span_words(soak.baseline_s)})
                       if ax is axes[0] else None)
            for i, at in enumerate(x[restarts][:MAX_RESTART_LINES]):
                ax.axvline(at, color=LIMIT_COLOUR, linestyle=":", linewidth=1,
                           label=t("g4.plot_restart") if ax is axes[0] and i == 0 else None)
        ttft, thr, mem, ev = axes
        _line(ttft, x, p50 * k, t("g4.plot_p50"), TTFT_COLOUR)
        if np.isfinite(p99).any():
            _line(ttft, x, p99 * k, t("g4.plot_p99"), TTFT_COLOUR, style="--", width=0.9)
        bad = failed > 0
        if bad.any():
            ttft.plot(x[bad], np.nan_to_num(p50[bad] * k, nan=0.0), linestyle="none",
                      marker="x", markersize=5, color=LIMIT_COLOUR,
                      label=t("g4.plot_failed"))
        ttft.set_ylabel(unit(t("g4.y_ttft_ms" if ms else "g4.y_ttft_s")))
        _line(thr, x, throughput, t("g4.y_throughput"), THROUGHPUT_COLOUR)
        thr.set_ylabel(unit(t("g4.y_throughput")))
        _line(mem, x, rss, t("g4.y_rss_gb" if rss_gb else "g4.y_rss_mb"), RSS_COLOUR)
        mem.set_ylabel(t("g4.y_rss_gb" if rss_gb else "g4.y_rss_mb"))
        _evidence(ev, x, hit_share, read_share, unsampled, soak, t)
        ev.set_xlabel(t(xlabel))
        for ax in (ttft, thr, mem):
            ax.set_ylim(bottom=0)
        # a window at 0 % (no hits: not engaged) drawn above the axis, not along it
        ev.set_ylim(bottom=-0.06 * ev.get_ylim()[1])
        ttft.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncols=5, borderaxespad=0,
                    handlelength=1.8)
        ev.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncols=4, borderaxespad=0,
                  handlelength=1.8)
    n = len(windows)
    window = float(np.nanmedian(length)) if n else float("nan")
    return Plot(title=t("g4.plot_title"), data_uri=out[0], caption=t("g4.plot_caption", {
        "n": fmt.number(n), "window": span_words(window),
        "min": fmt.pct(soak.min_engaged_share, 0)}))


def _evidence(ax: Axes, x: np.ndarray, hits: np.ndarray | None, reads: np.ndarray | None,
              unsampled: np.ndarray, soak: Soak, t: Translator) -> None:
    """External-tier hits and device reads per window, % of the baseline's mean, and the
    engaged rule's floor: a window below it (or unsampled) is not engaged."""
    floor = soak.min_engaged_share * 100
    ax.axhspan(0, floor, color=LIMIT_COLOUR, alpha=0.06, linewidth=0)
    ax.axhline(floor, color=LIMIT_COLOUR, linestyle="--", linewidth=1,
               label=t("g4.plot_min_share", {"min": fmt.pct(soak.min_engaged_share, 0)}))
    if hits is not None:
        _line(ax, x, hits * 100, t("g4.plot_hits"), HITS_COLOUR)
    if reads is not None:
        _line(ax, x, reads * 100, t("g4.plot_reads"), READS_COLOUR, style="--")
    if unsampled.any():
        ax.plot(x[unsampled], np.zeros(int(unsampled.sum())), linestyle="none", marker="v",
                markersize=4, color=UNSAMPLED_COLOUR, label=t("g4.plot_unsampled"))
    if hits is None and reads is None:
        ax.text(0.5, 0.78, t("g4.plot_no_level"), transform=ax.transAxes, ha="center",
                va="center", fontsize=7.5, color="#555555",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85})
        ax.set_ylim(top=max(110.0, floor * 2))
    ax.set_ylabel(t("g4.y_share"))


def criterion_name(t: Translator, nodeid: str) -> str:
    """`...::test_criterion[ttft_drift]` -> "TTFT p50 drift" in the report's language."""
    inner = nodeid[nodeid.rindex("[") + 1:].rstrip("]") if "[" in nodeid else nodeid
    key = f"g4.criterion.{inner}"
    return t(key) if key in t.messages else inner


def criteria_table(frames: RunFrames, t: Translator) -> Table | None:
    """One row per criterion as the gate judged it: what it asks, what the windows
    showed (the stored reason codes, in the report's language) and its outcome."""
    checks = frames.checks
    if checks.empty:
        return None
    mine = checks[checks["nodeid"].astype(str).str.contains(CRITERION, regex=False)]
    if mine.empty:
        return None
    rows, tones = [], []
    for c in mine.itertuples(index=False):
        measured = measured_words(c, t)
        if measured == checkwords.EMPTY:  # an ERROR says why in its message
            measured = message_words(c, t)
        tone, word = so_far(frames.run, t, str(c.outcome), outcome_word(t, str(c.outcome)))
        rows.append([criterion_name(t, str(c.nodeid)), expected_words(c, t), measured, word])
        tones.append(tone)
    return Table(columns=[t("col.criterion"), t("col.expected"), t("col.measured"),
                          t("col.outcome")], rows=rows, tones=tones)


def _sum(values: np.ndarray) -> float | None:
    """The sum of the sampled windows; None when none was sampled."""
    ok = values[np.isfinite(values)]
    return float(ok.sum()) if ok.size else None


def _gb(value: float | None) -> str:
    return fmt.dash() if value is None else f"{value / 1e9:,.2f}"


def totals_table(frames: RunFrames, t: Translator) -> Table:
    w = frames.windows.sort_values("idx")
    factor = simtime.speed(frames)
    requests = int(pd.to_numeric(w["requests"], errors="coerce").fillna(0).sum())
    failed = int(failed_counts(w).sum())
    p50 = _col(w, "ttft_p50_s")
    first = float(p50[0]) if math.isfinite(p50[0]) else None
    last = float(p50[-1]) if math.isfinite(p50[-1]) else None
    reads = _gb(_sum(_col(w, "device_read_bytes")))
    volume = _sum(_col(w, "kv_volume_read_bytes"))
    reads_col = t("g4.col_reads")
    if volume is not None:  # the GPU hosts' KV volume was read too: storage / GPU host
        reads, reads_col = f"{reads} / {_gb(volume)}", t("g4.col_reads_both")
    share = f" ({fmt.pct(failed / requests)})" if requests else ""
    row = [fmt.number(len(w)), fmt.number(requests), f"{fmt.number(failed)}{share}",
           simtime.seconds(first, factor, t), simtime.seconds(last, factor, t),
           fmt.number(_sum(_col(w, "external_hit_tokens"))), reads]
    return Table(columns=[t("g4.col_windows"), t("col.requests"), t("col.failed"),
                          t("g4.col_ttft_first"), t("g4.col_ttft_last"), t("g4.col_hits"),
                          reads_col], rows=[row])


def build(frames: RunFrames, ctx: Context) -> Contribution:
    """The generic section (checks, failed checks, events, notes, page-1 rows) with the
    soak's windows, criteria and totals after it."""
    t = ctx.t
    base = generic.build(frames, ctx)
    section = base.section
    notes = list(section.notes)
    tables = list(section.tables)
    plots_: list[Plot] = []  # generic's `window:` series plots: superseded by the windows
    crit = criteria_table(frames, t)
    if crit is not None:
        tables.append((t("g4.h_criteria"), crit))
    if frames.windows.empty:
        notes.append(t("g4.no_windows"))
    else:
        soak = soak_settings(frames.run.config_json)
        plots_ = [windows_plot(frames.windows.sort_values("idx"), soak, ctx,
                               simtime.speed(frames))]
        tables.append((t("g4.h_totals"), totals_table(frames, t)))
        # the totals' "model" lines (a simulated run), said once as the phases table says it
        notes += [n for n in simtime.note(simtime.speed(frames), t) if n not in notes]
    return Contribution(
        section=section.model_copy(update={"kind": "g4", "template": G4.template,
                                           "notes": notes, "tables": tables,
                                           "plots": plots_}),
        criteria=base.criteria, findings=base.findings, settings=base.settings,
        arms=base.arms, accepts=base.accepts, accepts_short=base.accepts_short)


def metrics(frames: RunFrames, t: Translator) -> list[TrendMetric]:
    """What a weekly G4 follows: its checks, each criterion's outcome, and the windows'
    typical TTFT p50 and throughput, failed share and restarts."""
    out = [m for m in generic.metrics(frames, t) if m.key == "checks_passed"]
    checks = frames.checks
    if not checks.empty:
        mine = checks[checks["nodeid"].astype(str).str.contains(CRITERION, regex=False)]
        for c in mine.itertuples(index=False):
            name = criterion_name(t, str(c.nodeid))
            out.append(TrendMetric(key=f"criterion:{c.nodeid}", label=name, value=None,
                                   text=outcome_word(t, str(c.outcome))))
    w = frames.windows
    if w.empty:
        return out
    p50 = _col(w, "ttft_p50_s")
    length = _col(w, "length_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        thr = _col(w, "output_tokens") / np.where(length > 0, length, np.nan)
    ttft = float(np.nanmedian(p50)) if np.isfinite(p50).any() else None
    rate = float(np.nanmedian(thr)) if np.isfinite(thr).any() else None
    requests = float(pd.to_numeric(w["requests"], errors="coerce").fillna(0).sum())
    failed = float(failed_counts(w).sum()) / requests if requests else None
    restarts = float(_col(w, "engine_restarts").sum())
    return [*out,
            TrendMetric(key="windows", label=t("g4.trend_windows"), value=float(len(w)),
                        text=fmt.number(len(w))),
            TrendMetric(key="ttft_p50", label=t("g4.trend_ttft"), value=ttft,
                        text=fmt.seconds(ttft), better="lower", tolerance=0.05,
                        relative=True),
            TrendMetric(key="throughput", label=t("g4.trend_throughput"), value=rate,
                        text=fmt.rate(rate), better="higher", tolerance=0.05, relative=True),
            TrendMetric(key="failed", label=t("g4.trend_failed"), value=failed,
                        text=fmt.pct(failed, 2), better="lower", tolerance=0.001),
            TrendMetric(key="restarts", label=t("g4.trend_restarts"), value=restarts,
                        text=fmt.number(restarts), better="lower")]


G4 = SectionBuilder(build=build, metrics=metrics, template="sections/g4.html.j2")
