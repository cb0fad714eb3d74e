"""G3's plan part: per layout and tier, each arm's TTFT p50 the planner predicted beside
what G3 measured (with its interval), and where the model was off and by how much.

Why in G3's report: the planner (harness.plan, `gate plan`) says before G3 what G3
should show; only after G3 can anyone see how far to trust it at this site. It is a risk,
never a gate: nothing here adds a criterion, a finding or a verdict. The prediction is
made as `gate plan` makes it, from the run's stored config and what G2 measured in the
same campaign (harness.plan.g2, harness.plan.site); without G2's figures the part says
so and predicts nothing. A simulated run compares like with like: its measured times in
the model's time, and the accelerated arm predicted from the simulated tier's modelled
bandwidth (its engines' cards) rather than from G2's fio, which read the disk of the
machine running the simulator; without that bandwidth the arm is not predicted (a
comparison of two different devices gave +5000 % "errors").
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
from harness.plan.inputs import Sourced
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


def sim_reads(frames: RunFrames) -> dict[str, Sourced]:
    """layout -> one host's read bandwidth of the simulated tier, bytes / s, as the
    accelerated arm's engines report it (harness.report.simtime.tier_gbps)."""
    return {layout: Sourced(gbps * 1e9, "the simulated tier's modelled read bandwidth")
            for layout, gbps in simtime.tier_gbps(frames.facts).items()}


def _io(g2: G2Measured, t: Translator) -> str:
    """How G2's fio read the volume, from its target's `direct`."""
    direct = g2.volume is not None and g2.volume.direct
    return t("g3plan.io_direct" if direct else "g3plan.io_buffered")


def _fio(g2: G2Measured, hosts: Sequence[str], t: Translator) -> str | None:
    fio = worst(g2.seq_read, hosts)
    if fio is None:
        return None
    return t("g3plan.read_fio", {"volume": g2.volume.name if g2.volume else "?",
                                 "host": fio[0], "run": fio[1].run,
                                 "value": fmt.gbps(float(fio[1].value) / 1e3),
                                 "io": _io(g2, t)})


def simulated_line(factor: float, g2: G2Measured, t: Translator) -> str:
    """What a simulated run's comparison is, and what G2's fio measured instead."""
    fio = _fio(g2, (), t)
    return t("g3plan.simulated", {"speed": f"{factor:g}",
                                  "fio": fio if fio is not None else t("g3plan.fio_none")})


def _read_words(g2: G2Measured, hosts: Sequence[str], t: Translator,
                sim: Sourced | None) -> str:
    """Where a layout's read bandwidth came from: the simulated tier (`sim`, a simulated
    run's; its value None: its engines did not say it), else fio, else gdsio."""
    if sim is not None:
        if sim.value is None:
            return t("g3plan.read_sim_none")
        return t("g3plan.read_sim", {"value": fmt.gbps(sim.value / 1e9)})
    fio = _fio(g2, hosts, t)
    if fio is not None:
        return fio
    gds = worst(g2.gdsio, hosts)
    if gds is not None:
        return t("g3plan.read_gdsio", {"host": gds[0], "run": gds[1].run,
                                       "value": fmt.gbps(float(gds[1].value) * 2**30 / 1e9)})
    return t("g3plan.read_none")


def _sources(preds: Sequence[Prediction], g2: G2Measured, planned_hosts: dict[str, tuple[
        str, ...]], t: Translator, reads: dict[str, Sourced] | None = None) -> list[str]:
    """Per layout, where its prefill speed and read bandwidth came from, in words
    (`reads`: a simulated run's, from its tier instead of G2's)."""
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
        read = _read_words(g2, planned_hosts.get(layout, ()), t,
                           None if reads is None else reads.get(layout, Sourced(None)))
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
    factor = simtime.speed(frames)
    reads = sim_reads(frames) if factor is not None else None
    preds = predictions(planned, g2, reads)
    hosts = {p.layout: h for p, h in zip(planned.inputs, planned.hosts, strict=True)}
    found = rows(frames, preds, req, level_of, interval, factor)
    lines = [t("g3plan.intro"), *_sources(preds, g2, hosts, t, reads)]
    if factor is not None:
        lines.append(simulated_line(factor, g2, t))
    return PlanPart(title=title, lines=lines, table=table(found, t, level),
                    misses=misses(found, t))
