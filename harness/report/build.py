"""Assemble the report model: page 1 (verdicts first), one section per gate, trends,
appendix. Everything the templates show is decided here, in the report's language."""

from __future__ import annotations

import time

import pandas as pd

from harness.report import fmt
from harness.report.appendix import build_appendix
from harness.report.fonts import Fonts
from harness.report.frames import RunFrames, RunInfo, campaign_info, gate_runs, load_run
from harness.report.i18n import Translator, translator
from harness.report.model import Badge, Criterion, Finding, Report, Signoff, TrendSection
from harness.report.sections import Context, Contribution, builder_for
from harness.report.sections.base import badge, gate_title
from harness.report.sections.g3 import cell_level, ci_label
from harness.report.trends import trend_section
from harness.store.db import Store
from harness.verdict import GATES


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


def _signoffs(frames: RunFrames, t: Translator) -> list[Signoff]:
    return [Signoff(run_id=frames.run.id, gate=frames.run.gate or "—",
                    role=t(f"role.{s.role}") if f"role.{s.role}" in t.messages else str(s.role),
                    name=str(s.name), date=fmt.when(s.at), note=str(s.note or ""))
            for s in frames.signoffs.itertuples(index=False)]


def _page1_marks(frames: RunFrames, t: Translator) -> tuple[list[str], list[str]]:
    r = frames.run
    gate = r.gate or "—"
    progress = [t("page1.in_progress", {"gate": gate, "run": r.id,
                                        "heartbeat": fmt.when(r.heartbeat_at)})
                ] if r.status == "RUNNING" else []
    marks = []
    if r.forced:
        marks.append(t("page1.forced", {"gate": gate, "run": r.id}))
    if r.partial:
        marks.append(t("page1.partial", {"gate": gate, "run": r.id, "n": r.checks_selected,
                                         "m": r.checks_total}))
    return progress, marks


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
              trends: list[TrendSection], ident: str) -> Report:
    ctx = Context(t=t, fonts=fonts)
    contributions: list[Contribution] = [builder_for(f.run.gate).build(f, ctx) for f in main]
    criteria: list[Criterion] = [c for x in contributions for c in x.criteria]
    findings: list[Finding] = [f for x in contributions for f in x.findings]
    progress: list[str] = []
    marks: list[str] = []
    signoffs: list[Signoff] = []
    for f in main:
        p, m = _page1_marks(f, t)
        progress += p
        marks += m
        signoffs += _signoffs(f, t)
    simulated = any(f.run.simulated for f in main)
    confidences = [cell_level(c) for f in main for c in f.cells.itertuples(index=False)]
    stamp = t("stamp.simulated") if simulated else ""
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
        footer=t("footer", {"site": site, "ident": ident}))


def build_run_report(store: Store, run_id: int, t: Translator, fonts: Fonts) -> Report:
    frames = load_run(store, run_id)
    r = frames.run
    runs = gate_runs(store, r.campaign)
    badges = []
    for gate in GATES:
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
                     trends=trends, ident=t("footer_run", {"run": r.id}))


def build_campaign_report(store: Store, campaign: str, t: Translator, fonts: Fonts) -> Report:
    info = campaign_info(store, campaign)
    runs = gate_runs(store, campaign)
    main: list[RunFrames] = []
    badges: list[Badge] = []
    trends: list[TrendSection] = []
    for gate in GATES:
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
                     trends=trends, ident=t("footer_campaign", {"campaign": info.name}))
