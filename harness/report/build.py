"""Assemble the report model: page 1 (verdicts first), one section per gate, trends,
appendix. Everything the templates show is decided here, in the report's language."""

from __future__ import annotations

import time

import pandas as pd

from harness.registry import GATE_IDS
from harness.report import fmt, page1
from harness.report.appendix import build_appendix
from harness.report.fonts import Fonts
from harness.report.frames import (
    RunFrames,
    RunInfo,
    campaign_info,
    gate_attempts,
    gate_runs,
    load_run,
)
from harness.report.i18n import Translator, translator
from harness.report.model import (
    Badge,
    Criterion,
    GateAttempts,
    Report,
    Signoff,
    TrendSection,
)
from harness.report.sections import Context, Contribution, builder_for
from harness.report.sections.base import badge, gate_title, kind_title, run_notes
from harness.report.sections.g3 import cell_level, ci_label
from harness.report.trends import trend_section
from harness.store.db import Store


def _standing(runs: pd.DataFrame, gate: str, before: float | None = None) -> int | None:
    """The run that stands for a gate: the latest non-partial one, else the latest."""
    mine = runs[runs["gate"] == gate]
    if before is not None:
        mine = mine[mine["started_at"] <= before]
    if mine.empty:
        return None
    full = mine[~mine["partial"].astype(bool)]
    return int((full if not full.empty else mine)["id"].iloc[-1])


def _history(store: Store, runs: pd.DataFrame, current: RunFrames) -> list[RunFrames]:
    r = current.run
    mine = runs[(runs["gate"] == r.gate) & (runs["started_at"] <= r.started_at)
                & (runs["id"] != r.id) & (runs["status"] != "RUNNING")
                & (~runs["partial"].astype(bool))]
    earlier = [load_run(store, int(i), with_requests=False) for i in mine["id"].tail(7)]
    return [*earlier, current]


def _operator(infos: list[RunInfo]) -> str:
    names: list[str] = []
    for r in infos:
        op = r.operator or str(((r.config_json.get("campaign") or {}).get("operator")) or "")
        if op and op not in names:
            names.append(op)
    return ", ".join(names) or "—"


def _period(infos: list[RunInfo]) -> str:
    if not infos:
        return "—"
    start = min(r.started_at for r in infos)
    end = max((r.finished_at or r.heartbeat_at or r.started_at) for r in infos)
    a, b = fmt.day(start), fmt.day(end)
    return a if a == b else f"{a} – {b}"


def _assemble(*, kind: str, t: Translator, fonts: Fonts, title: str, site: str,
              customer: str, campaign: str, main: list[RunFrames], badges: list[Badge],
              trends: list[TrendSection], ident: str, not_a_gate: str = "",
              not_a_gate_notes: list[str] | None = None,
              attempts: list[GateAttempts] | None = None,
              store: Store | None = None) -> Report:
    ctx = Context(t=t, fonts=fonts, store=store)
    contributions: list[Contribution] = [builder_for(f.run.gate).build(f, ctx) for f in main]
    criteria: list[Criterion] = [c for x in contributions for c in x.criteria]
    findings, more = page1.reasons([f for x in contributions for f in x.findings],
                                   [f.run for f in main], [f.checks for f in main], t)
    progress: list[str] = []
    marks: list[str] = []
    signoffs: list[Signoff] = []
    accepted: list[str] = []
    for f, x in zip(main, contributions, strict=True):
        p, m = page1.progress_and_marks(f, t)
        progress += p
        marks += m
        signoffs += page1.signoffs(f, t, x.accepts_short)
        accepted += page1.accepted(f, t, x.accepts)
    simulated = any(f.run.simulated for f in main)
    confidences = [cell_level(c) for f in main for c in f.cells.itertuples(index=False)]
    # In the page header of every page (report.css: string(stamp)): a RUNNING run's
    # numbers are not a result, whatever colour its rows have so far.
    running = any(f.run.status == "RUNNING" for f in main)
    overall, overall_token = page1.overall(badges, t) if not not_a_gate else ("", "")
    stamp = " · ".join(([t("stamp.in_progress")] if running else [])
                       + ([t("stamp.simulated")] if simulated else []))
    return Report(
        kind="run" if kind == "run" else "campaign", lang=t.lang,
        title=(t("title.simulated_prefix") + title) if simulated else title,
        site=site, customer=customer or "—", campaign=campaign,
        operator=_operator([f.run for f in main]), period=_period([f.run for f in main]),
        generated=fmt.when(time.time()), simulated=simulated, stamp=stamp,
        in_progress=progress, badges=badges, ci_label=ci_label(t, confidences),
        criteria=criteria, findings=findings, marks=marks, signoffs=signoffs,
        sections=[c.section for c in contributions], trends=trends,
        appendix=build_appendix(main, t, translator("en"), translator("zh")),
        font_stack=fonts.css_stack(),
        footer=t("footer", {"site": site, "ident": ident}),
        not_a_gate=not_a_gate, not_a_gate_notes=not_a_gate_notes or [],
        attempts=attempts or [], accepted=accepted,
        settings=[x.settings for x in contributions if x.settings is not None],
        arms=[x.arms for x in contributions if x.arms is not None],
        overall=overall, overall_token=overall_token, more=more)


def _attempts(store: Store, campaign: str, main: list[RunFrames],
              t: Translator) -> list[GateAttempts]:
    """Every attempt of each gate the report stands on, the standing run marked."""
    this = {f.run.id for f in main}
    gates = [g for g in GATE_IDS if any(f.run.gate == g for f in main)]
    return [page1.gate_attempts(g, gate_attempts(store, campaign, g), this, t) for g in gates]


def build_run_report(store: Store, run_id: int, t: Translator, fonts: Fonts) -> Report:
    frames = load_run(store, run_id)
    r = frames.run
    if r.kind != "gate":
        return _not_a_gate_report(frames, t, fonts)
    runs = gate_runs(store, r.campaign_ref)
    badges = []
    for gate in GATE_IDS:
        if gate == r.gate:
            badges.append(badge(r, gate, t))
            continue
        other = _standing(runs, gate, before=r.started_at)
        badges.append(badge(load_run(store, other, with_requests=False).run if other else None,
                            gate, t))
    trends = []
    if r.kind == "gate" and r.gate:
        trend = trend_section(r.gate, _history(store, runs, frames), t, fonts)
        trends = [trend] if trend else []
    title = t("title.run", {"site": r.site, "gate": gate_title(t, r.gate or r.kind),
                            "run": r.id})
    return _assemble(kind="run", t=t, fonts=fonts, title=title, site=r.site,
                     customer=r.customer, campaign=r.campaign, main=[frames], badges=badges,
                     trends=trends, ident=t("footer_run", {"run": r.id}),
                     attempts=_attempts(store, r.campaign_ref, [frames], t), store=store)


def _not_a_gate_report(frames: RunFrames, t: Translator, fonts: Fonts) -> Report:
    """A bench or an import: its cover says what it is and shows its own badge (recorded,
    or ERROR), never a gate's: such a run is measured, not judged, and opens no gate."""
    r = frames.run
    what = kind_title(t, r.kind)
    title = t("title.run_other", {"site": r.site, "what": what, "run": r.id})
    return _assemble(kind="run", t=t, fonts=fonts, title=title, site=r.site,
                     customer=r.customer, campaign=r.campaign, main=[frames],
                     badges=[badge(r, r.kind, t)], trends=[],
                     ident=t("footer_run", {"run": r.id}), not_a_gate=what,
                     not_a_gate_notes=[t("kind.note"), *run_notes(r, t)])


def build_campaign_report(store: Store, campaign: str, t: Translator, fonts: Fonts) -> Report:
    info = campaign_info(store, campaign)
    runs = gate_runs(store, info.ref)
    main: list[RunFrames] = []
    badges: list[Badge] = []
    trends: list[TrendSection] = []
    for gate in GATE_IDS:
        rid = _standing(runs, gate)
        if rid is None:
            badges.append(badge(None, gate, t))
            continue
        frames = load_run(store, rid)
        main.append(frames)
        badges.append(badge(frames.run, gate, t))
        trend = trend_section(gate, _history(store, runs, frames), t, fonts)
        if trend:
            trends.append(trend)
    title = t("title.campaign", {"site": info.site, "campaign": info.name})
    return _assemble(kind="campaign", t=t, fonts=fonts, title=title, site=info.site,
                     customer=info.customer, campaign=info.name, main=main, badges=badges,
                     trends=trends, ident=t("footer_campaign", {"campaign": info.name}),
                     attempts=_attempts(store, info.ref, main, t), store=store)
