"""G3's section: per layout x tier decisions with their intervals, plots and evidence.

Cells (the `cell` table) are the decisions the gate made; the report shows them as stored
and never re-decides a cell. The per-criterion result on page 1 is taken from the cell's
details (`ttft_verdict`, `gain_verdict`) when the gate wrote them, else read off the
interval against the threshold exactly as DESIGN.md states the rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.config.models import G3Thresholds
from harness.report import fmt, plots, reasons, simtime
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Criterion, Finding, G3Layout, G3Section, Plot, Table
from harness.report.sections import g3_evidence, g3_page1, g3_plan, g3_rules
from harness.report.sections.base import (
    Context,
    Contribution,
    SectionBuilder,
    TrendMetric,
    badge,
    check_findings,
    checks_table,
    events_table,
    failed_checks_table,
    gate_title,
    run_notes,
    so_far,
)
from harness.report.sections.generic import checks_criterion
from harness.verdict import SIGNOFF_REASON

VERDICTS = ("PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR")
STYLES = ("-", "--", ":", "-.")
BOOTSTRAP = 1000


def thresholds(config: dict[str, Any]) -> G3Thresholds:
    raw = (((config or {}).get("gates") or {}).get("g3") or {}).get("thresholds") or {}
    try:
        return G3Thresholds.model_validate(raw)
    except ValueError:
        return G3Thresholds()


def _f(v: Any) -> float | None:
    if v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(x) else x


def criterion_result(lo: float | None, hi: float | None, threshold: float,
                     band_top: float | None = None, stored: Any = None) -> str:
    """The gate's rule on one interval: wholly above -> PASS, wholly below -> STOP-LOSS."""
    if stored in VERDICTS:
        return str(stored)
    if lo is None or hi is None:
        return "INCONCLUSIVE"
    if band_top is not None and lo > band_top:
        return "INCONCLUSIVE"
    if lo >= threshold:
        return "PASS"
    if hi < threshold:
        return "STOP-LOSS"
    return "INCONCLUSIVE"


def ci_label(t: Translator, confidences: list[float]) -> str:
    levels = sorted({round(c * 100, 2) for c in confidences}) or [95.0]
    if len(levels) == 1:
        return t("col.ci_level", {"level": f"{levels[0]:g}"})
    return t("col.ci")


def cell_level(cell: Any) -> float:
    """The level the cell's intervals were computed at (after alpha spending, if any)."""
    details = cell.details if isinstance(cell.details, dict) else {}
    level = _f(details.get("level"))
    return level if level is not None and 0 < level < 1 else float(cell.confidence)


def _signed_above_band(frames: RunFrames, cell: Any) -> bool:
    return bool(frames.run.signed and str(cell.reason or "").startswith(SIGNOFF_REASON))


def _cell_word(frames: RunFrames, cell: Any, t: Translator) -> tuple[str, str]:
    if str(cell.verdict) == "INCONCLUSIVE" and _signed_above_band(frames, cell):
        return "PASS", t("verdict.PASS_SIGNED")
    return so_far(frames.run, t, str(cell.verdict), t.verdict(str(cell.verdict)))


def cells_table(frames: RunFrames, cells: pd.DataFrame, ctx: Context) -> Table:
    t = ctx.t
    label = ci_label(t, [cell_level(c) for c in cells.itertuples(index=False)])
    cols = [t("col.tier"), t("col.ttft_base"), t("col.ttft_acc"), f"{t('col.drop')} ({label})",
            t("col.thr_base"), t("col.thr_acc"), f"{t('col.gain')} ({label})", t("col.n"),
            t("col.reps"), t("col.verdict")]
    rows, tones = [], []
    factor = simtime.speed(frames)  # a simulated run: modelled times beneath
    for c in cells.itertuples(index=False):
        tone, word = _cell_word(frames, c, t)
        rows.append([str(c.tier), simtime.seconds(_f(c.ttft_p50_baseline), factor, t),
                     simtime.seconds(_f(c.ttft_p50_accelerated), factor, t),
                     fmt.pct(_f(c.drop)) + "\n" + fmt.interval_pct_short(_f(c.drop_lo),
                                                                  _f(c.drop_hi)),
                     simtime.rate(_f(c.thr_baseline), factor, t),
                     simtime.rate(_f(c.thr_accelerated), factor, t),
                     fmt.pct(_f(c.gain)) + "\n" + fmt.interval_pct_short(_f(c.gain_lo),
                                                                  _f(c.gain_hi)),
                     # two lines like the intervals: one "1,024 / 1,024" line squeezed
                     # the columns beside it
                     f"{c.n_baseline} /\n{c.n_accelerated}", str(c.repetitions),
                     # "无法判定\n(INCONCLUSIVE)": one unbroken line ran past the table
                     word.replace(" (", "\n(", 1)])
        tones.append(tone)
    return Table(columns=cols, rows=rows, tones=tones)


def measured_ttft(frames: RunFrames) -> pd.DataFrame:
    """Measured-phase requests with arm, layout, tier; failed requests get TTFT = +inf."""
    req, bm = frames.requests, g3_evidence.measured(frames)
    if req is None or req.empty or bm.empty:
        return pd.DataFrame(columns=["arm", "layout", "tier", "ttft"])
    joined = req.join(bm.set_index("id")[["arm", "layout", "tier"]], on="benchmark_id",
                      how="inner")
    ttft = joined["ttft"].where(~joined["failed"], np.inf).fillna(np.inf)
    return joined.assign(ttft=ttft)[["arm", "layout", "tier", "ttft"]]


def p50_interval(values: np.ndarray, level: float, seed: int) -> tuple[float, float]:
    """A request-level bootstrap interval for the plot's whiskers (display only)."""
    if values.size < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    sample = values if values.size <= 5000 else rng.choice(values, 5000, replace=False)
    idx = rng.integers(0, sample.size, size=(BOOTSTRAP, sample.size))
    meds = np.nan_to_num(np.quantile(sample[idx], 0.5, axis=1), nan=np.inf)
    a = (1 - level) / 2
    return float(np.quantile(meds, a)), float(np.quantile(meds, 1 - a))


def layout_plots(frames: RunFrames, layout: str, cells: pd.DataFrame, req: pd.DataFrame,
                 ctx: Context, th: G3Thresholds) -> list[Plot]:
    t, out = ctx.t, []
    mine = req[req["layout"] == layout]
    # A simulated run's figures are drawn in the model's units, as its note says.
    factor = simtime.speed(frames)
    k, model = factor or 1.0, "_model" if factor is not None else ""
    if not mine.empty:
        tiers = sorted(int(x) for x in mine["tier"].unique())
        curves = {}
        for (arm, tier), part in mine.groupby(["arm", "tier"], sort=True):
            style = STYLES[tiers.index(int(tier)) % len(STYLES)]
            colour = plots.ARM_COLOURS.get(str(arm), "#444444")
            curves[f"{_arm(t, str(arm))} c={tier}"] = (
                part["ttft"].to_numpy(dtype=float) * k, colour, style)
        uri = plots.cdf(ctx.fonts, curves, xlabel=t(f"plot.ttft_s{model}"),
                        ylabel=t("plot.cdf"))
        out.append(Plot(title=t("plot.cdf_title", {"layout": layout}), data_uri=uri,
                        caption=t("plot.cdf_caption")))
    if cells.empty:
        return out
    cats = [f"c={c}" for c in cells["tier"]]
    level = cell_level(next(cells.itertuples(index=False)))
    groups = []
    for arm in ("baseline", "accelerated"):
        vals = _col(cells, f"ttft_p50_{arm}")
        lo, hi = [], []
        for i, tier in enumerate(cells["tier"]):
            sel = mine[(mine["arm"] == arm) & (mine["tier"] == tier)]["ttft"].to_numpy(float)
            a, b = p50_interval(sel, level, seed=1000 + i)
            lo.append(a * k)
            hi.append(b * k)
        groups.append(plots.Bars(label=_arm(t, arm), values=[v * k for v in vals], lo=lo,
                                 hi=hi, colour=plots.ARM_COLOURS[arm]))
    thr = []
    for arm in ("baseline", "accelerated"):
        spans = [rep_range(c, arm) for c in cells.itertuples(index=False)]
        thr.append(plots.Bars(label=_arm(t, arm), values=[v / k for v in _col(
            cells, f"thr_{arm}")], lo=[s[0] / k for s in spans], hi=[s[1] / k for s in spans],
            colour=plots.ARM_COLOURS[arm]))
    crit = [plots.Bars(label=t("col.drop"), values=_col(cells, "drop"),
                       lo=_col(cells, "drop_lo"), hi=_col(cells, "drop_hi")),
            plots.Bars(label=t("col.gain"), values=_col(cells, "gain"),
                       lo=_col(cells, "gain_lo"), hi=_col(cells, "gain_hi"))]
    lines = [(th.ttft_p50_drop, t("plot.min_drop")), (th.throughput_gain, t("plot.min_gain")),
             (th.band_top, t("plot.band_top"))]
    panels = [plots.BarPanel(title=t("plot.p50_title"), categories=cats, groups=groups,
                             ylabel=t(f"plot.ttft_s{model}")),
              plots.BarPanel(title=t("plot.thr_title"), categories=cats, groups=thr,
                             ylabel=t(f"plot.tok_s{model}")),
              plots.BarPanel(title=t("plot.crit_title"), categories=cats, groups=crit,
                             ylabel="", hlines=lines, percent=True)]
    out.append(Plot(title=t("plot.by_tier", {"layout": layout}),
                    data_uri=plots.bar_panels(ctx.fonts, panels),
                    caption=t("plot.bars_caption")))
    return out


def rep_range(cell: Any, arm: str) -> tuple[float, float]:
    """Lowest and highest throughput of the cell's repetitions for one arm (the decision
    stores them in details.per_rep); NaN when the run stored none (no whisker drawn)."""
    details = cell.details if isinstance(cell.details, dict) else {}
    per = ((details.get("per_rep") or {}).get(arm) or {}).get("throughput") or []
    vals = [x for v in per if (x := _f(v)) is not None and np.isfinite(x)]
    return (min(vals), max(vals)) if vals else (float("nan"), float("nan"))


def _col(cells: pd.DataFrame, name: str) -> list[float]:
    """A cell column as floats with NaN for missing (0.0 stays 0.0)."""
    return [np.nan if (x := _f(v)) is None else x for v in cells[name]]


def _arm(t: Translator, arm: str) -> str:
    return t(f"arm.{arm}") if arm in ("baseline", "accelerated") else arm


def criteria(frames: RunFrames, t: Translator, th: G3Thresholds) -> list[Criterion]:
    out = []
    for c in frames.cells.itertuples(index=False):
        details = c.details if isinstance(c.details, dict) else {}
        where = f"{c.layout} · c={c.tier}"
        n = f"{c.n_baseline} / {c.n_accelerated}"
        drop = criterion_result(_f(c.drop_lo), _f(c.drop_hi), th.ttft_p50_drop,
                                stored=details.get("drop_verdict", details.get("ttft_verdict")))
        gain = criterion_result(_f(c.gain_lo), _f(c.gain_hi), th.throughput_gain, th.band_top,
                                stored=details.get("gain_verdict"))
        if gain == "INCONCLUSIVE" and _signed_above_band(frames, c):
            gain_word = t("verdict.PASS_SIGNED")
            gain = "PASS"
        else:
            gain, gain_word = so_far(frames.run, t, gain, t.verdict(gain))
        drop, drop_word = so_far(frames.run, t, drop, t.verdict(drop))
        out.append(Criterion(gate="G3", criterion=t("crit.drop", {"where": where}),
                             threshold="≥ " + fmt.pct(th.ttft_p50_drop), estimate=fmt.pct(
                                 _f(c.drop)), ci=fmt.interval_pct(_f(c.drop_lo), _f(c.drop_hi)),
                             n=n, token=drop, result=drop_word))
        out.append(Criterion(gate="G3", criterion=t("crit.gain", {"where": where}),
                             threshold=t("crit.gain_threshold", {
                                 "min": fmt.pct(th.throughput_gain),
                                 "top": fmt.pct(th.band_top)}),
                             estimate=fmt.pct(_f(c.gain)),
                             ci=fmt.interval_pct(_f(c.gain_lo), _f(c.gain_hi)), n=n,
                             token=gain, result=gain_word))
    if not frames.checks.empty:
        out.append(checks_criterion(frames, t, own=True))
    return out


def findings(frames: RunFrames, t: Translator, th: G3Thresholds,
             crit: list[Criterion]) -> list[Finding]:
    out = []
    by_where = {(c.criterion, c.token) for c in crit}
    for c in frames.cells.itertuples(index=False):
        if str(c.verdict) == "PASS" or _signed_above_band(frames, c):
            continue
        where = f"{c.layout} · c={c.tier}"
        values = {"layout": c.layout, "tier": c.tier, "reason": reasons.cell(t, c),
                  "verdict": t.verdict(str(c.verdict))}
        said = False
        if (t("crit.drop", {"where": where}), "STOP-LOSS") in by_where:
            out.append(Finding(gate="G3", token="STOP-LOSS", text=t("finding.g3_drop", {
                **values, "value": fmt.pct(_f(c.drop)),
                "ci": fmt.interval_pct(_f(c.drop_lo), _f(c.drop_hi)),
                "threshold": fmt.pct(th.ttft_p50_drop)})))
            said = True
        if (t("crit.gain", {"where": where}), "STOP-LOSS") in by_where:
            out.append(Finding(gate="G3", token="STOP-LOSS", text=t("finding.g3_gain", {
                **values, "value": fmt.pct(_f(c.gain)),
                "ci": fmt.interval_pct(_f(c.gain_lo), _f(c.gain_hi)),
                "threshold": fmt.pct(th.throughput_gain)})))
            said = True
        if not said:
            out.append(Finding(gate="G3", token=str(c.verdict),
                               text=t("finding.g3_cell", values)))
    checks = check_findings(frames.run, frames.checks, t)
    # The gate records a check per cell too; when cells already say why, keep only the
    # checks that say something else (preflight errors).
    return out + ([f for f in checks if f.token == "ERROR"] if out else checks)


def build(frames: RunFrames, ctx: Context) -> Contribution:
    t, run = ctx.t, frames.run
    th = thresholds(run.config_json)
    factor = simtime.speed(frames)
    notes = [*run_notes(run, t, frames.checks), *simtime.note(factor, t)]
    tables: list[tuple[str, Table]] = []
    # The cells have their own table and plots: under "Preflight" only the preflight checks.
    preflight = frames.checks[~frames.checks["nodeid"].astype(str).str.contains(
        "::test_cell[", regex=False)] if not frames.checks.empty else frames.checks
    if not preflight.empty:
        tables.append((t("h.preflight"), checks_table(preflight, t, run)))
    if not frames.checks.empty:
        failed = failed_checks_table(frames.checks, t, gate=run.gate)
        if failed is not None:
            tables.append((t("h.failed_checks"), failed))
    events = events_table(frames.events, t)
    if events is not None:
        tables.append((t("h.events"), events))
    cells = frames.cells
    if cells.empty:
        notes.append(t("note.no_cells"))
    req = measured_ttft(frames)
    layouts = []
    names = sorted(set(cells["layout"]) | set(req["layout"])) if not req.empty else sorted(
        set(cells["layout"]))
    for layout in names:
        mine = cells[cells["layout"] == layout].sort_values("tier")
        table = cells_table(frames, mine, ctx) if not mine.empty else Table(columns=[], rows=[])
        layouts.append(G3Layout(layout=str(layout), cells=table,
                                plots=layout_plots(frames, str(layout), mine, req, ctx, th)))
    rates = g3_evidence.storage_rates(frames, factor)  # the model's GB/s at a speed
    crit = criteria(frames, t, th)
    section = G3Section(
        template=G3.template, gate="G3", title=gate_title(t, "G3"), run_id=run.id,
        badge=badge(run, "G3", t), notes=notes, tables=tables, layouts=layouts,
        rules=g3_rules.rule_lines(frames, cells, th, t) if not cells.empty else [],
        rules_table=g3_rules.rules_table(cells, t) if not cells.empty else None,
        storage=g3_evidence.storage_table(rates, ctx, factor is not None)
        if not rates.empty else None,
        storage_plot=g3_evidence.storage_plot(frames, rates, ctx, factor)
        if not rates.empty else None,
        storage_notes=simtime.tier_note(frames.facts, factor, t),
        evidence=g3_evidence.evidence_table(frames, ctx),
        crosschecks=g3_evidence.crosscheck_table(frames, ctx),
        # the planner's prediction beside what was measured: shown, never a verdict
        plan=g3_plan.plan_part(frames, ctx, req, cell_level, p50_interval, ci_label(
            t, [cell_level(c) for c in cells.itertuples(index=False)])))
    return Contribution(section=section, criteria=crit,
                        findings=[*findings(frames, t, th, crit),
                                  *g3_page1.weakened_finding(run, t)],
                        settings=g3_page1.settings(run, t), arms=g3_page1.arms(frames, t),
                        accepts=g3_page1.accepts(run, t),
                        accepts_short=g3_page1.accepts(run, t, short=True))


def metrics(frames: RunFrames, t: Translator) -> list[TrendMetric]:
    out = []
    for c in frames.cells.itertuples(index=False):
        where = f"{c.layout} · c={c.tier}"
        key = f"{c.layout}/{c.tier}"
        out.append(TrendMetric(key=f"drop:{key}", label=t("crit.drop", {"where": where}),
                               value=_f(c.drop), text=fmt.pct(_f(c.drop)), better="higher",
                               tolerance=0.02))
        out.append(TrendMetric(key=f"gain:{key}", label=t("crit.gain", {"where": where}),
                               value=_f(c.gain), text=fmt.pct(_f(c.gain)), better="higher",
                               tolerance=0.02))
        out.append(TrendMetric(key=f"p50acc:{key}", label=t("trend.p50_acc", {"where": where}),
                               value=_f(c.ttft_p50_accelerated),
                               text=fmt.seconds(_f(c.ttft_p50_accelerated)), better="lower",
                               tolerance=0.05, relative=True))
    return out


# g3.html.j2, then the plan part (sections/g3_plan.html.j2)
G3 = SectionBuilder(build=build, metrics=metrics, template="sections/g3_with_plan.html.j2")
