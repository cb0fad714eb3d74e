"""Trends: a gate's key metrics across its runs in the campaign, regressions marked.

A weekly scheduled G3 or G4 leaves one run a week; this lines them up (oldest left) and
marks a metric that got worse than the run before by more than its tolerance, and a
verdict that fell from PASS.
"""

from __future__ import annotations

import numpy as np

from harness.report import fmt, plots
from harness.report.fonts import Fonts
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Plot, Table, TrendSection
from harness.report.sections import TrendMetric, builder_for
from harness.report.sections.base import gate_title

MAX_RUNS = 8
MARK = "▼"


def regressed(prev: TrendMetric, cur: TrendMetric) -> bool:
    if cur.better is None or prev.value is None or cur.value is None:
        return False
    tol = cur.tolerance * abs(prev.value) if cur.relative else cur.tolerance
    if cur.better == "higher":
        return cur.value < prev.value - tol - 1e-12
    return cur.value > prev.value + tol + 1e-12


def trend_section(gate: str, history: list[RunFrames], t: Translator,
                  fonts: Fonts) -> TrendSection | None:
    """history: the gate's runs oldest first, the reported run last; None if only one."""
    history = history[-MAX_RUNS:]
    if len(history) < 2:
        return None
    builder = builder_for(gate)
    per_run = [{m.key: m for m in builder.metrics(f, t)} for f in history]
    keys: list[str] = []
    for metrics in reversed(per_run):
        keys.extend(k for k in metrics if k not in keys)
    cols = [t("col.metric")] + [f"#{f.run.id} {fmt.day(f.run.started_at)}" for f in history]
    verdicts = [t.verdict(f.run.effective) for f in history]
    regressions: list[str] = []
    for i in range(1, len(history)):
        if history[i - 1].run.effective == "PASS" and history[i].run.effective != "PASS":
            verdicts[i] += f" {MARK}"
            regressions.append(t("trend.verdict_fell", {
                "run": history[i].run.id, "prev": history[i - 1].run.id,
                "verdict": t.verdict(history[i].run.effective)}))
    rows = [[t("col.verdict"), *verdicts]]
    for key in keys:
        label = next(m[key].label for m in reversed(per_run) if key in m)
        row = [label]
        last: TrendMetric | None = None
        last_run = 0
        for f, metrics in zip(history, per_run, strict=True):
            m = metrics.get(key)
            if m is None:
                row.append("—")
                continue
            text = m.text
            if last is not None and regressed(last, m):
                text += f" {MARK}"
                regressions.append(t("trend.regressed", {
                    "metric": label, "before": last.text, "after": m.text,
                    "run": f.run.id, "prev": last_run}))
            row.append(text)
            last, last_run = m, f.run.id
        rows.append(row)
    return TrendSection(gate=gate, title=t("h.trend", {"gate": gate_title(t, gate)}),
                        table=Table(columns=cols, rows=rows), regressions=regressions,
                        plot=_plot(history, per_run, keys, t, fonts))


def _plot(history: list[RunFrames], per_run: list[dict[str, TrendMetric]], keys: list[str],
          t: Translator, fonts: Fonts) -> Plot | None:
    ratio_keys = [k for k in keys if k.startswith(("drop:", "gain:"))][:6]
    if not ratio_keys:
        return None
    t0 = history[0].run.started_at
    days = np.array([(f.run.started_at - t0) / 86400.0 for f in history])
    series = {}
    for key in ratio_keys:
        vals = np.array([(m[key].value if key in m and m[key].value is not None else np.nan)
                         for m in per_run], dtype=float) * 100.0
        label = next(m[key].label for m in reversed(per_run) if key in m)
        series[label] = (days, vals)
    uri = plots.lines(fonts, series, xlabel=t("plot.days"), ylabel="%", height=2.6)
    return Plot(title=t("plot.trend_title"), data_uri=uri, caption=t("plot.trend_caption"))
