"""G3's plan part: per layout and tier, each arm's TTFT p50 the planner predicted beside
what G3 measured (with its interval), and where the model was off and by how much.

Why in G3's report: the planner (harness.plan, `gate plan`) says before G3 what G3
should show; only after G3 can anyone see how far to trust it at this site. It is a risk,
never a gate: nothing here adds a criterion, a finding or a verdict. The prediction is
made as `gate plan` makes it, from the run's stored config and what G2 measured in the
same campaign (harness.plan.g2, harness.plan.site); without G2's figures the part says
so and predicts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import ValidationError

from harness.config.models import SiteConfig
from harness.errors import UsageError
from harness.plan.g2 import GATE, G2Measured, fact_keys, from_facts, worst
from harness.plan.site import WhatIf, build, serving_at
from harness.plan.versus import Prediction, predictions, relative_error
from harness.report import fmt, simtime
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import PlanPart, Table
from harness.report.sections.base import Context
from harness.store.lookups import campaign_facts

ARMS = ("baseline", "accelerated")
Interval = Callable[[np.ndarray, float, int], tuple[float, float]]


@dataclass(frozen=True)
class Row:
    """One arm at one cell: seconds in the model's time for a simulated run."""

    layout: str
    tier: int
    arm: str
    predicted: float | None
    measured: float | None
    lo: float | None
    hi: float | None

    @property
    def error(self) -> float | None:
        if self.predicted is None or self.measured is None:
            return None
        return relative_error(self.predicted, self.measured)

    @property
    def inside(self) -> bool:
        return (self.predicted is not None and self.lo is not None and self.hi is not None
                and self.lo <= self.predicted <= self.hi)


def _f(v: object) -> float | None:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _g2(ctx: Context, frames: RunFrames, cfg: SiteConfig,
        tiers: Sequence[int]) -> G2Measured | None:
    if ctx.store is None:
        return None
    facts = campaign_facts(ctx.store, frames.run.campaign_ref, GATE, fact_keys(cfg, tiers))
    return from_facts(cfg, facts, tiers)


def rows(frames: RunFrames, preds: Sequence[Prediction], req: pd.DataFrame,
         level_of: Callable[[object], float], interval: Interval,
         factor: float | None) -> list[Row]:
    """Predicted beside measured per cell and arm; measured times (and their request-level
    bootstrap interval, as G3's plot whiskers) scaled to the model's time at `factor`."""
    by_cell = {(p.layout, p.concurrency): p for p in preds}
    order = {layout: n for n, layout in enumerate(dict.fromkeys(p.layout for p in preds))}
    cells = frames.cells.assign(_order=[order.get(str(x), len(order))
                                        for x in frames.cells["layout"]])
    scale = factor or 1.0
    out = []
    for i, c in enumerate(cells.sort_values(["_order", "layout", "tier"])
                          .itertuples(index=False)):
        pred = by_cell.get((str(c.layout), int(c.tier)))
        for arm in ARMS:
            sel = req[(req["layout"] == c.layout) & (req["tier"] == c.tier)
                      & (req["arm"] == arm)]["ttft"].to_numpy(float)
            lo, hi = interval(sel, level_of(c), 1000 + i)
            measured = _f(getattr(c, f"ttft_p50_{arm}"))
            predicted = None if pred is None else getattr(pred, f"{arm}_s")
            out.append(Row(str(c.layout), int(c.tier), arm, predicted,
                           None if measured is None else measured * scale,
                           None if _f(lo) is None else float(lo) * scale,
                           None if _f(hi) is None else float(hi) * scale))
    return out


def _signed(v: float | None) -> str:
    """+17 % / −30 %, kept on one line (a no-break space before the sign of per cent)."""
    if v is None:
        return fmt.dash()
    return ("+" if v >= 0 else "−") + fmt.pct(abs(v), 0).replace(" ", "\u00a0")


def table(found: Sequence[Row], t: Translator, level: str) -> Table:
    cols = [t("g3plan.col.layout"), t("g3plan.col.tier"), t("g3plan.col.arm"),
            t("g3plan.col.predicted"), t("g3plan.col.measured", {"level": level}),
            t("g3plan.col.error")]
    body = [[r.layout, str(r.tier), t(f"arm.{r.arm}"), fmt.seconds(r.predicted),
             fmt.seconds(r.measured) + "\n" + (
                 f"[{r.lo:.3f}, {r.hi:.3f}]" if r.lo is not None and r.hi is not None
                 else fmt.dash()), _signed(r.error)] for r in found]
    return Table(columns=cols, rows=body, tones=[""] * len(body))


def misses(found: Sequence[Row], t: Translator) -> list[str]:
    """Per arm: the span of the errors, the cell furthest off, and how many predictions
    fall inside the measured interval."""
    out = []
    for arm in ARMS:
        mine = [r for r in found if r.arm == arm and r.error is not None]
        if not mine:
            out.append(t("g3plan.arm_none", {"arm": t(f"arm.{arm}")}))
            continue
        far = max(mine, key=lambda r: abs(r.error or 0.0))
        errors = [r.error or 0.0 for r in mine]
        lo, hi = _signed(min(errors)), _signed(max(errors))
        out.append(t("g3plan.arm_off", {
            "arm": t(f"arm.{arm}"),
            "span": lo if lo == hi else t("g3plan.span", {"lo": lo, "hi": hi}),
            "layout": far.layout, "tier": far.tier, "predicted": fmt.seconds(far.predicted),
            "measured": fmt.seconds(far.measured), "error": _signed(far.error),
            "inside": sum(r.inside for r in mine), "n": len(mine)}))
    return out


def _sources(preds: Sequence[Prediction], g2: G2Measured, planned_hosts: dict[str, tuple[
        str, ...]], t: Translator) -> list[str]:
    """Per layout, where its prefill speed and read bandwidth came from, in words."""
    out = []
    for layout in dict.fromkeys(p.layout for p in preds):
        mine = [p for p in preds if p.layout == layout]
        cells = sorted({f"{layout}-c{at[1]}" for p in mine
                        if (at := serving_at(g2, layout, p.concurrency)) is not None})
        speeds = [p.prefill.value for p in mine if p.prefill.value is not None]
        span = sorted({f"{x:,.0f}" for x in speeds}, key=lambda x: float(x.replace(",", "")))
        speed = span[0] if len(span) == 1 else f"{span[0]}–{span[-1]}" if span else ""
        prefill = (t("g3plan.prefill_g2", {"cells": ", ".join(cells), "speed": speed})
                   if cells and speeds else
                   t("g3plan.prefill_config", {"speed": speed})
                   if speeds else t("g3plan.prefill_none"))
        hosts = planned_hosts.get(layout, ())
        fio = worst(g2.seq_read, hosts)
        gds = worst(g2.gdsio, hosts)
        volume = g2.volume.name if g2.volume else "?"
        read = (t("g3plan.read_fio", {"volume": volume, "host": fio[0], "run": fio[1].run,
                                      "value": fmt.gbps(float(fio[1].value) / 1e3)})
                if fio is not None else
                t("g3plan.read_gdsio", {"host": gds[0], "run": gds[1].run,
                                        "value": fmt.gbps(float(gds[1].value) * 2**30 / 1e9)})
                if gds is not None else t("g3plan.read_none"))
        out.append(t("g3plan.layout_inputs", {"layout": layout, "prefill": prefill,
                                              "read": read}))
    return out


def plan_part(frames: RunFrames, ctx: Context, req: pd.DataFrame,
              level_of: Callable[[object], float], interval: Interval,
              level: str) -> PlanPart | None:
    """The part, or None for a run without cells (nothing measured to compare with)."""
    t, run = ctx.t, frames.run
    if frames.cells.empty:
        return None
    title = t("g3plan.title")
    try:
        cfg = SiteConfig.model_validate(run.config_json)
    except ValidationError:
        return PlanPart(title=title, lines=[t("g3plan.no_config")])
    tiers = sorted({int(x) for x in frames.cells["tier"]})
    g2 = _g2(ctx, frames, cfg, tiers)
    if g2 is None or g2.empty:
        return PlanPart(title=title, lines=[t("g3plan.no_g2", {"campaign": run.campaign})])
    try:
        planned = build(WhatIf(concurrency=tuple(tiers)), cfg, None, g2)
    except (UsageError, ValueError) as exc:  # a setting the planner refuses: said, not raised
        why = exc.message if isinstance(exc, UsageError) else str(exc)
        return PlanPart(title=title, lines=[t("g3plan.no_plan", {"why": why})])
    preds = predictions(planned, g2)
    hosts = {p.layout: h for p, h in zip(planned.inputs, planned.hosts, strict=True)}
    factor = simtime.speed(frames)
    found = rows(frames, preds, req, level_of, interval, factor)
    lines = [t("g3plan.intro"), *_sources(preds, g2, hosts, t)]
    if factor is not None:
        lines.append(t("g3plan.simulated", {"speed": f"{factor:g}"}))
    return PlanPart(title=title, lines=lines, table=table(found, t, level),
                    misses=misses(found, t))
