"""G1 and G2 sections: the generic checks section plus a host-by-item matrix (G1: which
host has which item as ordered; G2: each fio figure beside its bound, the serving
baseline per layout x tier) and the serials and baselines recorded as host facts. Items
the lab could not check show as SKIPPED with the reason, in the matrix as in the checks
table."""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from harness.g1.plan import PLAN_FACT
from harness.report import checkwords, factwords, fmt, simtime
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
    return Table(columns=[t("col.host"), *(factwords.item(t, i) for i in columns),
                          t("col.outcome")], rows=rows, tones=tones)


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
        rows.append([str(f.host), factwords.fact_key(t, str(f.key)), value[:300]])
    return Table(columns=[t("col.host"), t("arrival.col_fact"), t("arrival.col_value")],
                 rows=rows)


def _with(contribution: Contribution, extra: list[tuple[str, Table]],
          notes: Sequence[str] = (),
          measured: tuple[str, Mapping[int, str]] | None = None) -> Contribution:
    """The generic section with the gate's own tables first and its own notes after the
    generic ones; `measured` (the checks table's heading, row -> a line) adds a line under
    a row's measured words there (G2's serving checks in the model's units)."""
    tables = list(contribution.section.tables)
    if measured is not None and measured[1]:
        heading, lines = measured
        tables = [(h, _lines_added(tbl, lines)) if h == heading else (h, tbl)
                  for h, tbl in tables]
    section = contribution.section.model_copy(
        update={"tables": extra + tables, "notes": [*contribution.section.notes, *notes]})
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
            rows.append([str(c.host or "—"), _target_job(t, c), measured_words(c, t),
                         expected_words(c, t), word])
            tones.append(tone)
        extra.append((t("arrival.h_fio"), Table(
            columns=[t("col.host"), t("arrival.col_job"), t("col.measured"),
                     t("col.expected"), t("col.outcome")], rows=rows, tones=tones)))
    factor = simtime.speed(frames)
    serving = _serving_table(frames, t, factor)
    if serving is not None:
        extra.append((t("arrival.h_serving"), serving))
    notes = [*_fio_notes(frames, t), *([t("sim.fio")] if frames.run.simulated else [])]
    return _with(base, extra, notes, (t("h.checks"), _serving_models(frames, t, factor)))


def _fio_notes(frames: RunFrames, t: Translator) -> list[str]:
    """The targets fio ran buffered on (`direct: false` in the run's config)."""
    g2 = ((frames.run.config_json or {}).get("gates") or {}).get("g2") or {}
    buffered = [str(f.get("name")) for f in g2.get("fio") or []
                if isinstance(f, dict) and f.get("direct") is False]
    return [t("arrival.fio_buffered", {"targets": ", ".join(buffered)})] if buffered else []


def _serving_model(frames: RunFrames, c: object, factor: float | None,
                   t: Translator) -> str | None:
    """A simulated serving check's figures in the model's units (its host fact `serving
    prefill CELL`: TTFT p50 x speed, throughput and prefill / speed); None elsewhere."""
    if factor is None or frames.facts.empty:
        return None
    cell = str(getattr(c, "nodeid", "")).rsplit("[", 1)[-1].rstrip("]")
    facts = frames.facts[(frames.facts["key"] == f"serving prefill {cell}")
                         & (frames.facts["host"] == getattr(c, "host", None))]
    value = facts.iloc[-1]["value"] if not facts.empty else None
    if not isinstance(value, dict):
        return None
    try:
        ttft = statistics.median(float(x) for x in value["ttft_p50_s"])
        thr = statistics.median(float(x) for x in value["throughput_tps"])
        prefill = float(value["tokens_per_s"])
    except (KeyError, TypeError, ValueError, statistics.StatisticsError):
        return None
    return t("sim.serving", {"ttft": fmt.seconds(ttft * factor), "thr": f"{thr / factor:,.1f}",
                             "prefill": f"{prefill / factor:,.0f}"})


def _serving_models(frames: RunFrames, t: Translator, factor: float | None) -> dict[int, str]:
    """Row index in the checks table -> the model's line of a simulated serving check."""
    if factor is None or frames.checks.empty:
        return {}
    found = {}
    for i, c in enumerate(frames.checks.itertuples(index=False)):
        if str(c.name) == "test_serving":
            line = _serving_model(frames, c, factor, t)
            if line is not None:
                found[i] = line
    return found


def _lines_added(table: Table, lines: Mapping[int, str]) -> Table:
    """`table` (base.checks_table: measured words in column 3) with `lines` under them."""
    rows = [[*r[:3], r[3] + "\n" + lines[i], *r[4:]] if i in lines else r
            for i, r in enumerate(table.rows)]
    return table.model_copy(update={"rows": rows})


def _target_job(t: Translator, c: object) -> str:
    """A fio check's target and job (`local-disk seq-read`), its host left out: the
    table has a host column."""
    host = str(getattr(c, "host", "") or "")
    param = str(getattr(c, "nodeid", "")).rsplit("[", 1)[-1].rstrip("]")
    words = checkwords.param(t, param, host or None)
    head = t("checkwords.host_item", {"host": host, "item": ""})
    return words.removeprefix(head) if host else words


def _serving_table(frames: RunFrames, t: Translator,
                   factor: float | None = None) -> Table | None:
    """One row per layout x tier of the serving baseline: its figures beside its limits
    (at a simulator speed `factor`, the model's figures beneath)."""
    checks = frames.checks[frames.checks["name"] == "test_serving"]
    if checks.empty:
        return None
    rows, tones = [], []
    for c in checks.itertuples(index=False):  # a run in progress: grey, "so far"
        tone, word = so_far(frames.run, t, str(c.outcome), outcome_word(t, str(c.outcome)))
        model = _serving_model(frames, c, factor, t)
        rows.append([str(c.nodeid).rsplit("[", 1)[-1].rstrip("]"),
                     measured_words(c, t) + ("" if model is None else "\n" + model),
                     expected_words(c, t), word])
        tones.append(tone)
    return Table(columns=[t("arrival.col_cell"), t("col.measured"), t("col.expected"),
                          t("col.outcome")], rows=rows, tones=tones)


G1_SECTION = SectionBuilder(build=build_g1, metrics=GENERIC.metrics,
                            template=GENERIC.template)
G2_SECTION = SectionBuilder(build=build_g2, metrics=GENERIC.metrics,
                            template=GENERIC.template)
