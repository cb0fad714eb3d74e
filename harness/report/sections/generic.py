"""The section every gate gets until it brings its own: checks and measured phases.

Runs that are no gate's (bench, import) use it, and G4's section builds on it. Phases are
aggregated from request rows with pandas group-bys (a soak's million rows are a few numpy
columns).
"""

from __future__ import annotations

import re

import pandas as pd

from harness.report import factwords, fmt, simtime
from harness.report.frames import RunFrames
from harness.report.i18n import Translator
from harness.report.model import Criterion, Section, Table
from harness.report.page1 import outcome_counts
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
    is_gate,
    kind_title,
    measured_words,
    run_notes,
    so_far,
)
from harness.report.sections.base import (
    label_words as check_label_words,
)
from harness.verdict import Verdict, combine

_VERDICTS = {v.value for v in Verdict}
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def phase_stats(frames: RunFrames) -> pd.DataFrame:
    """Per (phase, arm, layout, tier): phases, requests, failed, TTFT p50/p99, throughput.

    TTFT percentiles are over successful requests (vLLM's definition); failures are
    counted beside them. Throughput = completed output tokens / wall time, summed over
    the group's phases.
    """
    bm = frames.benchmarks
    req = frames.requests
    if bm.empty or req is None or req.empty:
        return pd.DataFrame()
    ok = req[~req["failed"]]
    per = req.groupby("benchmark_id").agg(requests=("failed", "size"), failed=("failed", "sum"))
    tokens = ok.groupby("benchmark_id")["output_tokens"].sum()
    per = per.join(tokens.rename("tokens"), how="left")
    joined = bm.set_index("id")[["phase", "arm", "layout", "tier", "duration"]].join(
        per, how="inner")
    keys = ["phase", "arm", "layout", "tier"]
    grouped = joined.groupby(keys, sort=True).agg(
        phases=("requests", "size"), requests=("requests", "sum"), failed=("failed", "sum"),
        tokens=("tokens", "sum"), seconds=("duration", "sum"))
    ttft = ok.join(bm.set_index("id")[keys], on="benchmark_id").groupby(keys)["ttft"]
    grouped["p50"] = ttft.quantile(0.5)
    grouped["p99"] = ttft.quantile(0.99)
    grouped["throughput"] = grouped["tokens"] / grouped["seconds"].where(grouped["seconds"] > 0)
    return grouped.reset_index()


def phases_table(stats: pd.DataFrame, t: Translator, factor: float | None = None) -> Table:
    """`factor`: a simulated run's speed: modelled times beneath the measured ones."""
    cols = [t("col.phase"), t("col.arm"), t("col.layout"), t("col.tier"), t("col.phases"),
            t("col.requests"), t("col.failed"), t("col.ttft_p50"), t("col.ttft_p99"),
            t("col.throughput")]
    rows = [[factwords.word(t, "phase", str(r.phase)),
             factwords.arm(t, str(r.arm)) if r.arm else "—", str(r.layout or "—"),
             str(r.tier),
             fmt.number(r.phases), fmt.number(r.requests), fmt.number(r.failed),
             simtime.seconds(r.p50, factor, t), simtime.seconds(r.p99, factor, t),
             simtime.rate(r.throughput, factor, t)]
            for r in stats.itertuples(index=False)]
    return Table(columns=cols, rows=rows)


def build(frames: RunFrames, ctx: Context) -> Contribution:
    t, run = ctx.t, frames.run
    gate = run.gate or run.kind  # bench / import runs have no gate
    notes = run_notes(run, t, frames.checks)
    tables: list[tuple[str, Table]] = []
    checks = frames.checks
    if checks.empty:
        if is_gate(run):
            notes.append(t("note.no_checks"))
    else:
        tables.append((t("h.checks"), checks_table(checks, t, run)))
        failed = failed_checks_table(checks, t, gate=run.gate)
        if failed is not None:
            tables.append((t("h.failed_checks"), failed))
    events = events_table(frames.events, t)
    if events is not None:
        tables.append((t("h.events"), events))
    stats = phase_stats(frames)
    if not stats.empty:
        factor = simtime.speed(frames)
        notes += simtime.note(factor, t)
        tables.append((t("h.phases"), phases_table(stats, t, factor)))
    b = badge(run, gate, t)
    title = gate_title(t, gate) if is_gate(run) else kind_title(t, run.kind)
    section = Section(kind="checks", template=GENERIC.template, gate=gate,
                      title=title, run_id=run.id, badge=b, notes=notes,
                      tables=tables)
    if not is_gate(run):  # measured, not judged: no criterion, no finding
        return Contribution(section=section)
    return Contribution(section=section, criteria=[checks_criterion(frames, t)],
                        findings=check_findings(run, checks, t))


def checks_criterion(frames: RunFrames, t: Translator, *, own: bool = False) -> Criterion:
    """One page-1 row for a run's checks. The row carries the run's verdict (the checks
    are the gate), or with own=True the checks' combined outcome (G3: its preflight
    checks are one criterion beside the cells)."""
    run, checks = frames.run, frames.checks
    counted = checks[checks["outcome"] != "SKIPPED"]
    token = run.effective
    if own:
        token = combine(Verdict(o) for o in counted["outcome"] if o in _VERDICTS)[0].value
    token, word = so_far(run, t, token, t.verdict(token))
    return Criterion(
        gate=run.gate or run.kind, criterion=t("crit.all_checks", {"gate": run.gate or run.kind}),
        threshold=t("crit.all_checks_threshold"),
        estimate=outcome_counts([str(o) for o in checks["outcome"]], t), ci="—",
        n=str(len(counted)), token=token, result=word)


def metrics(frames: RunFrames, t: Translator) -> list[TrendMetric]:
    checks = frames.checks
    counted = checks[checks["outcome"] != "SKIPPED"]
    passed = int((counted["outcome"] == "PASS").sum())
    out = [TrendMetric(key="checks_passed", label=t("trend.checks_passed"), value=float(passed),
                       text=f"{passed} / {len(counted)}", better="higher")]
    seen: set[str] = set()
    for c in counted.itertuples(index=False):
        m = _NUMBER.match(str(c.measured or ""))
        key = f"check:{c.name}@{c.host}"
        if m and key not in seen and len(seen) < 12:
            seen.add(key)  # the check and its figure in the report's language
            out.append(TrendMetric(key=key, label=check_label_words(c, frames.run.gate, t),
                                   value=float(m.group(1)), text=measured_words(c, t)))
    return out


GENERIC = SectionBuilder(build=build, metrics=metrics, template="sections/checks.html.j2")
