"""What a gate section builder gets and gives back, and the pieces every section shares.

A builder turns one run's frames into its section plus the rows it adds to page 1 (the
criteria table and the plain-language findings), and names the metrics the trend section
follows across runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from harness.config.decision import DIFFERS_BY, WEAKENED_REASON
from harness.labels import check_label
from harness.registry import GATE_IDS, gate_spec
from harness.report import checkwords, factwords, fmt, reasons
from harness.report.fonts import Fonts
from harness.report.frames import RunFrames, RunInfo
from harness.report.i18n import Translator
from harness.report.model import (
    ArmsCheck,
    Badge,
    Criterion,
    Finding,
    RunSettings,
    Section,
    Table,
)
from harness.store.db import Store
from harness.verdict import RECORDED, SIGNOFF_REASON


@dataclass(frozen=True)
class Context:
    t: Translator
    fonts: Fonts
    # the store the report reads: G3's plan section reads G2's figures of the same
    # campaign (None: a report built without one says it has none)
    store: Store | None = None


@dataclass(frozen=True)
class Contribution:
    """A run's section and what it adds to page 1: criteria rows, findings, and for a gate
    that has them, its decision settings off their defaults, what differed between its
    arms, and what a reviewer's sign-off of the run accepts (in words)."""

    section: Section
    criteria: list[Criterion] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    settings: RunSettings | None = None
    arms: ArmsCheck | None = None
    accepts: str = ""  # in full, for the page-1 line
    accepts_short: str = ""  # for the sign-off table


@dataclass(frozen=True)
class TrendMetric:
    """One number followed across runs; `better` says which way is good (None: no rule)."""

    key: str
    label: str
    value: float | None
    text: str
    better: Literal["higher", "lower"] | None = None
    tolerance: float = 0.0  # allowed worsening before a change is a regression
    relative: bool = False  # tolerance is a fraction of the earlier value


BuildFn = Callable[[RunFrames, Context], Contribution]
MetricsFn = Callable[[RunFrames, Translator], list[TrendMetric]]


@dataclass(frozen=True)
class SectionBuilder:
    build: BuildFn
    metrics: MetricsFn
    template: str


def gate_title(t: Translator, gate: str | None) -> str:
    g = gate or "?"
    return f"{g} · {t.gate_name(g)}" if g in GATE_IDS else g


def kind_title(t: Translator, kind: str) -> str:
    """What a run that is not a gate is, in words: "Benchmark (not a gate)"."""
    key = f"kind.{kind}"
    return t(key) if key in t.messages else t("kind.other", {"kind": kind})


def kind_short(t: Translator, kind: str) -> str:
    key = f"kind.{kind}_short"
    return t(key) if key in t.messages else kind


def is_gate(run: RunInfo) -> bool:
    return run.kind == "gate"


def marks(run: RunInfo, t: Translator) -> list[str]:
    """The honesty marks of a run, in words: FORCED, PARTIAL, signed, SIMULATED."""
    out = []
    if run.simulated:
        out.append(t("mark.simulated"))
    if run.forced:
        out.append(t("mark.forced"))
    if run.status == "ABORTED":  # page 1 says it, not only "ERROR"
        out.append(t("mark.aborted"))
    if run.partial:
        out.append(t("mark.partial", {"n": run.checks_selected, "m": run.checks_total,
                                      "pct": fmt.pct(run.checks_selected / run.checks_total, 0)
                                      if run.checks_total else fmt.dash()}))
    if run.signed and run.needs_signoff:
        out.append(t("mark.signed"))
    elif run.needs_signoff and run.status == "FINISHED":
        out.append(t("mark.needs_signoff"))
    return out


def badge(run: RunInfo | None, gate: str, t: Translator) -> Badge:
    if run is None:
        return Badge(gate=gate, gate_name=t.gate_name(gate), token="NOT_RUN",
                     word=t.verdict("NOT_RUN"))
    token = run.effective
    if not is_gate(run):  # measured, not judged: its own kind, never a gate's badge
        return Badge(gate=kind_short(t, run.kind), gate_name=t("kind.not_gate"), token=token,
                     word=t.verdict(token), run_id=run.id, marks=marks(run, t),
                     date=fmt.day(run.finished_at or run.started_at), counts=False)
    word = t.verdict(token)
    if token == "PASS" and run.signed and run.needs_signoff:
        word = t("verdict.PASS_SIGNED")
    return Badge(gate=gate, gate_name=t.gate_name(gate), token=token, word=word, run_id=run.id,
                 marks=marks(run, t), date=fmt.day(run.finished_at or run.started_at),
                 counts=not run.partial)


def run_reason(run: RunInfo, t: Translator, checks: pd.DataFrame | None = None) -> str:
    """The run's stored reason in the report's language. The runner writes it as the
    first checks that did not pass, "label [host]: message; ..." (harness.runner): when
    the stored English is exactly that, it is said again from the checks' reason codes;
    anything else (a partial run, an infrastructure error, an older run) is shown as
    stored."""
    if run.reason == SIGNOFF_REASON:
        return t("reason.cell.above_band")
    weakened = weakened_settings(run, t)
    if run.reason.startswith(WEAKENED_REASON) and weakened:  # all its checks passed
        return t("signoff.weakened", {"settings": weakened})
    if checks is None or checks.empty or not run.reason:
        return run.reason
    bad = [c for c in checks.itertuples(index=False)
           if str(c.outcome) in ("STOP-LOSS", "ERROR", "INCONCLUSIVE") and c.message][:5]
    host = [f" [{c.host}]" if c.host else "" for c in bad]
    english = "; ".join(f"{check_label(run.gate, str(c.nodeid), str(c.name or c.nodeid))}"
                        f"{h}: {c.message}" for c, h in zip(bad, host, strict=True))
    if not bad or english != run.reason:
        return run.reason
    return t("reason.sep").join(t("reason.check", {"check": label_words(c, run.gate, t), "host": h,
                                                   "message": message_words(c, t)})
                                for c, h in zip(bad, host, strict=True))


def weakened_settings(run: RunInfo, t: Translator) -> str:
    """The run's weakened decision settings in one line ("gates.g4.duration 24s instead of
    72h; ..."), from its stored config; "" when none (harness/config/decision.py)."""
    spec = gate_spec(run.gate) if run.gate in GATE_IDS else None
    read = spec.deviations if spec is not None else None
    devs = [d for d in read(run.config_json) if d.weakened] if read is not None else []
    return t("settings.sep").join(
        t("settings.short", {"key": d.key, "value": factwords.word(t, "setting_value", d.value),
                             "default": t("settings.knobs") if d.key == DIFFERS_BY
                             else factwords.word(t, "setting_value", d.default)})
        for d in devs)


def run_notes(run: RunInfo, t: Translator, checks: pd.DataFrame | None = None) -> list[str]:
    """Why a run has no verdict or a bad one, in plain words (`checks`: the run's, to say
    its reason in the report's language)."""
    notes = []
    if run.status == "RUNNING":
        notes.append(t("note.running", {"run": run.id, "heartbeat": fmt.when(run.heartbeat_at)}))
    elif run.status == "ABORTED":
        notes.append(t("note.aborted", {"run": run.id, "reason": run.reason or "—"}))
    elif not is_gate(run) and run.effective == "ERROR":
        notes.append(t("note.not_gate_error", {"reason": run.reason or "—"}))
    elif run.effective in ("ERROR", "INCONCLUSIVE", "STOP-LOSS") and run.reason:
        notes.append(t("note.reason", {"verdict": t.verdict(run.effective),
                                       "reason": run_reason(run, t, checks)}))
    elif run.effective == RECORDED and run.reason:
        notes.append(t("note.recorded", {"reason": run.reason}))
    if run.partial:
        notes.append(t("note.partial", {"n": run.checks_selected, "m": run.checks_total}))
    if run.forced:
        notes.append(t("note.forced"))
    return notes


def outcome_word(t: Translator, outcome: str) -> str:
    return t.verdict(outcome if outcome != "SKIPPED" else "SKIPPED")


def so_far(run: RunInfo, t: Translator, token: str, word: str) -> tuple[str, str]:
    """A row of a RUNNING run is not a result: drawn grey ("RUNNING" tone), its word saying
    "in progress (so far PASS)" so no row of an unfinished run looks like a PASS."""
    if run.status != "RUNNING" or token in ("RUNNING", "NOT_RUN"):
        return token, word
    return "RUNNING", t("progress.so_far", {"verdict": word})


def label_words(c: Any, gate: str | None, t: Translator) -> str:
    """The check as people name it (`G3 · TP8 · c=16`), not its test function."""
    return check_label(gate, str(c.nodeid or ""),
                       checkwords.name(t, str(c.name or c.nodeid)),
                       param=lambda p: checkwords.param(t, p, c.host))


def _why(c: Any, key: str) -> object:
    """The check's stored reason for `key` (message / expected / measured), if any."""
    details = getattr(c, "details", None)
    return details.get(key) if isinstance(details, dict) else None


def _words(c: Any, t: Translator, key: str) -> str:
    """The check's `key` words (expected / measured / message) in the report's language:
    its stored reason code, else its stored words as they are, marked as such in a
    report that is not in English (checkwords.as_stored)."""
    words = reasons.said(t, _why(c, key))
    if words is not None:
        return words
    return checkwords.as_stored(t, str(getattr(c, key) or checkwords.EMPTY))


def expected_words(c: Any, t: Translator) -> str:
    return _words(c, t, "expected")


def measured_words(c: Any, t: Translator) -> str:
    return _words(c, t, "measured")


def message_words(c: Any, t: Translator) -> str:
    return _words(c, t, "message")


def checks_table(checks: pd.DataFrame, t: Translator, run: RunInfo) -> Table:
    cols = [t("col.check"), t("col.host"), t("col.expected"), t("col.measured"),
            t("col.outcome")]
    rows, tones = [], []
    for c in checks.itertuples(index=False):
        tone, word = so_far(run, t, str(c.outcome), outcome_word(t, str(c.outcome)))
        rows.append([label_words(c, run.gate, t), str(c.host or "—"), expected_words(c, t),
                     measured_words(c, t), word])
        tones.append(tone)
    return Table(columns=cols, rows=rows, tones=tones)


def failed_checks_table(checks: pd.DataFrame, t: Translator, limit: int = 30,
                        gate: str | None = None) -> Table | None:
    bad = checks[~checks["outcome"].isin(["PASS", "SKIPPED"])]
    if bad.empty:
        return None
    rows = [[label_words(c, gate, t), str(c.host or "—"), _clip(message_words(c, t), 400)]
            for c in bad.head(limit).itertuples(index=False)]
    return Table(columns=[t("col.check"), t("col.host"), t("col.message")], rows=rows,
                 tones=[str(o) for o in bad.head(limit)["outcome"]])


def events_table(events: pd.DataFrame, t: Translator, limit: int = 20) -> Table | None:
    if events.empty:
        return None
    rows = [[_word(t, "event.source", str(e.source)), str(e.name), str(e.host or "—"),
             _word(t, "event.status", str(e.status)), _clip(str(e.message or ""), 300)]
            for e in events.head(limit).itertuples(index=False)]
    return Table(columns=[t("col.source"), t("col.step"), t("col.host"), t("col.status"),
                          t("col.message")], rows=rows, tones=["ERROR"] * len(rows))


def _word(t: Translator, group: str, value: str) -> str:
    """An event's source / status (action, failed) in the report's language."""
    key = f"{group}.{value}"
    return t(key) if key in t.messages else value


def check_findings(run: RunInfo, checks: pd.DataFrame, t: Translator) -> list[Finding]:
    """Every check that did not pass, in words: measured failures (STOP-LOSS) first, then
    errors, then the undecided (page 1 lists them all, or says how many more:
    harness.report.page1.reasons)."""
    gate = run.gate or "?"
    out = []
    for c in checks[checks["outcome"] == "STOP-LOSS"].itertuples(index=False):
        values = {"check": label_words(c, run.gate, t), "host": c.host,
                  "expected": expected_words(c, t), "measured": measured_words(c, t)}
        key = "finding.check" if c.host else "finding.check_nohost"
        out.append(Finding(gate=gate, token="STOP-LOSS", text=t(key, values)))
    for outcome, word in (("ERROR", "check_error"), ("INCONCLUSIVE", "check_undecided")):
        for c in checks[checks["outcome"] == outcome].itertuples(index=False):
            values = {"check": label_words(c, run.gate, t), "host": c.host,
                      "message": _clip(message_words(c, t), 200)}
            key = f"finding.{word}" if c.host else f"finding.{word}_nohost"
            out.append(Finding(gate=gate, token=outcome, text=t(key, values)))
    return out


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
