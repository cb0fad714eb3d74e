"""G1 and G2 sections: the generic checks section plus a host-by-item matrix (G1: which
host has which item as ordered; G2: each fio figure beside its bound, the serving
baseline per layout x tier) and the serials and baselines recorded as host facts. Items
the lab could not check show as SKIPPED with the reason, in the matrix as in the checks
table."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from harness.g1.plan import PLAN_FACT
from harness.report.frames import RunFrames, RunInfo
from harness.report.i18n import Translator
from harness.report.model import Table
from harness.report.sections.base import (
    Context,
    Contribution,
    SectionBuilder,
    expected_words,
    measured_words,
    outcome_word,
    so_far,
)
from harness.report.sections.generic import GENERIC


def _split(nodeid: str, host: str | None) -> tuple[str, str] | None:
    """(host, item) of `test_item[gpu1-gpu]` / `test_health[gpu1-gpu-ecc]` checks."""
    param = nodeid.rsplit("[", 1)[-1].rstrip("]") if "[" in nodeid else ""
    if not host or not param.startswith(f"{host}-"):
        return None
    return host, param[len(host) + 1:]


def matrix(checks: pd.DataFrame, t: Translator, names: tuple[str, ...], run: RunInfo,
           planned: Mapping[str, Sequence[str]] | None = None) -> Table | None:
    """Hosts as rows, items (or fio target-job) as columns, the outcome in each cell.

    A host's outcome is its worst cell; a host whose only non-PASS cells are SKIPPED says
    "PASS (n skipped)" in a neutral tone, never a plain PASS. `planned` (host -> the items
    the run's plan gave it) makes a planned cell without a row "not run" and its host
    ERROR: the check never produced a result (INCONCLUSIVE in a partial run, which left
    it out on purpose and is no PASS either)."""
    cells: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for c in checks.itertuples(index=False):
        if str(c.name) not in names:
            continue
        split = _split(str(c.nodeid), c.host)
        if split is None:
            continue
        host, item = split
        if item not in columns:
            columns.append(item)
        cells.setdefault(host, {})[item] = str(c.outcome)
    for host, items in (planned or {}).items():
        for item in items:
            if item not in columns:
                columns.append(item)
            cells.setdefault(host, {}).setdefault(item, "NOT_RUN")
    if not cells:
        return None
    rows, tones = [], []
    for host in sorted(cells):
        tone, word = so_far(run, t, *_host_outcome(t, cells[host].values(), run.partial))
        rows.append([host] + [outcome_word(t, cells[host][i]) if i in cells[host] else "—"
                              for i in columns] + [word])
        tones.append(tone)  # the row's tone colours its last cell: the host's outcome
    return Table(columns=[t("col.host"), *columns, t("col.outcome")], rows=rows, tones=tones)


def _host_outcome(t: Translator, outcomes: Iterable[str], partial: bool) -> tuple[str, str]:
    """(tone token, word) of one host's row from its cells."""
    seen = list(outcomes)
    if "NOT_RUN" in seen and "STOP-LOSS" not in seen:
        # planned, no result: the plan failed (ERROR), or a partial run left it out, which
        # is no PASS either (the run itself is INCONCLUSIVE)
        token = "INCONCLUSIVE" if partial and "ERROR" not in seen else "ERROR"
        return token, outcome_word(t, token)
    worst = next((o for o in ("STOP-LOSS", "ERROR", "INCONCLUSIVE") if o in seen), None)
    if worst is not None:
        return worst, outcome_word(t, worst)
    skipped = seen.count("SKIPPED")
    if skipped:
        return "SKIPPED", t("arrival.pass_skipped", {"n": skipped})
    return "PASS", outcome_word(t, "PASS")


def planned_items(facts: pd.DataFrame, kind: str) -> dict[str, list[str]]:
    """host -> the items (kind "items") or health checks ("health") the G1 plan gave it, as
    the suite recorded them (host fact "g1 plan") before reading the hosts."""
    if facts.empty:
        return {}
    plan = facts[facts["key"].astype(str) == PLAN_FACT]
    found: dict[str, list[str]] = {}
    for f in plan.itertuples(index=False):
        value = f.value if isinstance(f.value, dict) else {}
        listed = value.get(kind, [])
        if isinstance(listed, list):
            found[str(f.host)] = [str(i) for i in listed]
    return found


def facts_table(facts: pd.DataFrame, t: Translator, prefix: tuple[str, ...]) -> Table | None:
    if facts.empty:
        return None
    chosen = facts[facts["key"].astype(str).str.startswith(prefix)]
    if chosen.empty:
        return None
    rows = []
    for f in chosen.sort_values(["host", "key"]).itertuples(index=False):
        value = f.value
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        rows.append([str(f.host), str(f.key), value[:300]])
    return Table(columns=[t("col.host"), t("arrival.col_fact"), t("arrival.col_value")],
                 rows=rows)


def _with(contribution: Contribution, extra: list[tuple[str, Table]]) -> Contribution:
    """The generic section with the gate's own tables first."""
    section = contribution.section.model_copy(
        update={"tables": extra + list(contribution.section.tables)})
    return dataclasses.replace(contribution, section=section)


def build_g1(frames: RunFrames, ctx: Context) -> Contribution:
    base = GENERIC.build(frames, ctx)
    t = ctx.t
    extra = []
    items = matrix(frames.checks, t, ("test_item",), frames.run,
                   planned_items(frames.facts, "items"))
    if items is not None:
        extra.append((t("arrival.h_items"), items))
    health = matrix(frames.checks, t, ("test_health",), frames.run,
                    planned_items(frames.facts, "health"))
    if health is not None:
        extra.append((t("arrival.h_health"), health))
    serials = facts_table(frames.facts, t, ("serial change", "gpu serials", "nvme serials",
                                            "nic guids", "pci serials", "gpu driver", "cuda",
                                            "kernel"))
    if serials is not None:
        extra.append((t("arrival.h_serials"), serials))
    return _with(base, extra)


def build_g2(frames: RunFrames, ctx: Context) -> Contribution:
    base = GENERIC.build(frames, ctx)
    t = ctx.t
    fio = frames.checks[frames.checks["name"] == "test_fio"]
    extra = []
    if not fio.empty:
        rows, tones = [], []
        for c in fio.itertuples(index=False):
            tone, word = so_far(frames.run, t, str(c.outcome), outcome_word(t, str(c.outcome)))
            rows.append([str(c.host or "—"), str(c.nodeid).rsplit("[", 1)[-1].rstrip("]")
                         .removeprefix(f"{c.host}-"), measured_words(c, t),
                         expected_words(c, t), word])
            tones.append(tone)
        extra.append((t("arrival.h_fio"), Table(
            columns=[t("col.host"), t("arrival.col_job"), t("col.measured"),
                     t("col.expected"), t("col.outcome")], rows=rows, tones=tones)))
    serving = _serving_table(frames, t)
    if serving is not None:
        extra.append((t("arrival.h_serving"), serving))
    return _with(base, extra)


def _serving_table(frames: RunFrames, t: Translator) -> Table | None:
    """One row per layout x tier of the serving baseline: its figures beside its limits."""
    checks = frames.checks[frames.checks["name"] == "test_serving"]
    if checks.empty:
        return None
    rows, tones = [], []
    for c in checks.itertuples(index=False):  # a run in progress: grey, "so far"
        tone, word = so_far(frames.run, t, str(c.outcome), outcome_word(t, str(c.outcome)))
        rows.append([str(c.nodeid).rsplit("[", 1)[-1].rstrip("]"), measured_words(c, t),
                     expected_words(c, t), word])
        tones.append(tone)
    return Table(columns=[t("arrival.col_cell"), t("col.measured"), t("col.expected"),
                          t("col.outcome")], rows=rows, tones=tones)


G1_SECTION = SectionBuilder(build=build_g1, metrics=GENERIC.metrics,
                            template=GENERIC.template)
G2_SECTION = SectionBuilder(build=build_g2, metrics=GENERIC.metrics,
                            template=GENERIC.template)
