"""G3's report shows the plan: each arm's predicted TTFT p50 beside what G3 measured, from
the run's stored config and G2's figures of the same campaign, against the default demo's
store (a real simulated G1-G4; shared with the other demo files, tests/parallel.py).

The predictions are checked against the formulas of docs/plan.md worked by hand from the
stored config and G2's host facts (not by calling the planner again); the plan never
changes a verdict; without G2's figures the part says so and shows no number; the
Chinese PDF's part is in Chinese."""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.report.api import render_run_report
from harness.report.build import build_run_report
from harness.report.fonts import choose_fonts
from harness.report.frames import load_run
from harness.report.i18n import translator
from harness.report.model import G3Section, PlanPart
from harness.report.sections import Context
from harness.report.sections.g3 import build as build_g3
from harness.store.db import Store

if TYPE_CHECKING:
    from demo_fixtures import Demo

pytest_plugins = ["demo_fixtures"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(demo_default: Demo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the default demo's site: the demo's own store is never touched."""
    return demo_default.copy_site(tmp_path_factory.mktemp("plan-report") / "site")


@pytest.fixture(scope="module")
def store(site: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{site / 'gate.db'}")
    yield opened
    opened.close()


def _query(db: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return list(conn.execute(sql, params))


def _g3(db: Path) -> tuple[int, dict[str, Any]]:
    ((rid, config),) = _query(db, "SELECT id, config_json FROM run WHERE gate = 'G3'")
    return int(rid), json.loads(config) if isinstance(config, str) else config


def _fact(db: Path, key: str) -> list[Any]:
    rows = _query(db, "SELECT f.value FROM host_fact f JOIN run r ON r.id = f.run_id "
                      "WHERE r.gate = 'G2' AND f.key = ?", key)
    return [json.loads(v) if isinstance(v, str) else v for (v,) in rows]


def _plan(store: Store, rid: int, lang: str = "en") -> PlanPart:
    report = build_run_report(store, rid, translator(lang), choose_fonts(lang))
    (section,) = report.sections
    assert isinstance(section, G3Section)
    assert section.plan is not None
    return section.plan


def _seconds(text: str) -> float | None:
    first = text.split("\n")[0]
    return None if first == "—" else float(first.removesuffix(" s"))


def _speed(config: dict[str, Any]) -> float:
    words = config["arms"]["baseline"]["start"]["command"]
    return float(words[words.index("--speed") + 1])


def test_the_plan_is_the_formulas_on_g2s_figures_beside_g3s(site: Path, store: Store) -> None:
    """docs/plan.md by hand: P from G2's serving baseline (P = c x L / TTFT p50 in the
    model's time), baseline c x L / P, accelerated c x q / P (+ the host copy without
    GDS) + c x doc x kvb / read; measured in the model's time; error predicted /
    measured - 1. The run is simulated, so `read` is the simulated tier's modelled
    bandwidth as the accelerated engines' cards say it, not G2's fio of this machine's
    disk (which made the accelerated arm's "error" +5000 %)."""
    db = site / "gate.db"
    rid, cfg = _g3(db)
    speed = _speed(cfg)
    m, wl = cfg["model"], cfg["workload"]
    kvb = m["layers"] * m["kv_heads"] * m["head_dim"] * 2 * {"bf16": 2, "fp16": 2}[m["dtype"]]
    doc, q = wl["doc_tokens"], wl["question_tokens"]
    served = {key.removeprefix("serving prefill "): key for (key,) in _query(
        db, "SELECT DISTINCT f.key FROM host_fact f JOIN run r ON r.id = f.run_id "
            "WHERE r.gate = 'G2' AND f.key LIKE 'serving prefill %'")}
    cell = next(c for c in served if c.startswith("TP8-c"))  # the demo serves TP8
    c_g2 = int(cell.rsplit("-c", 1)[1])
    (value,) = _fact(db, served[cell])
    prefill = c_g2 * (doc + q) / (statistics.median(value["ttft_p50_s"]) * speed)
    read = _tier_bytes_s(db, rid, "TP8")
    tp8 = next(layout for layout in cfg["layouts"] if layout["name"] == "TP8")
    gds = bool(cfg["gates"]["g2"].get("gds"))

    plan = _plan(store, rid)
    assert plan.table is not None
    rows = {(r[0], int(r[1]), r[2]): r for r in plan.table.rows}
    cells = _query(db, "SELECT layout, tier, ttft_p50_baseline, ttft_p50_accelerated "
                       "FROM cell WHERE run_id = ?", rid)
    assert len(rows) == 2 * len(cells)
    for layout, tier, base, acc in cells:
        b, a = rows[(layout, tier, "baseline")], rows[(layout, tier, "accelerated")]
        assert _seconds(b[4]) == pytest.approx(base * speed, abs=6e-4)
        assert _seconds(a[4]) == pytest.approx(acc * speed, abs=6e-4)
        if layout != "TP8":  # G2 served no cell of it: no prefill speed, nothing predicted
            assert _seconds(b[3]) is None and _seconds(a[3]) is None and b[5] == "—"
            continue
        want_b = tier * (doc + q) / prefill
        bounce = 0.0 if gds else tier * doc * kvb / (tp8["tp"] * 25e9)
        want_a = tier * q / prefill + bounce + tier * doc * kvb / read
        assert _seconds(b[3]) == pytest.approx(want_b, abs=6e-4)
        assert _seconds(a[3]) == pytest.approx(want_a, abs=6e-4)
        error = round((want_b / (base * speed) - 1) * 100)
        assert b[5].replace("\u00a0", " ") == f"{'+' if error >= 0 else '−'}{abs(error)} %"
    # a cell of G3 that errored on a busy machine has no row: TP8 must have one at least
    assert any(layout == "TP8" for layout, *_ in cells)
    # at the cell G2 served, the baseline's prediction is G2's own TTFT p50 given back
    at = rows.get(("TP8", c_g2, "baseline"))
    if at is not None:
        want = statistics.median(value["ttft_p50_s"]) * speed
        assert _seconds(at[3]) == pytest.approx(want, abs=6e-4)
    assert len(plan.misses) == 2 and all("off by" in line for line in plan.misses)
    assert any("fio volume seq-read" in line and "buffered through the page cache" in line
               for line in plan.lines)  # what fio measured instead, said once
    assert any("the simulated tier's modelled bandwidth" in line for line in plan.lines)


def _tier_bytes_s(db: Path, rid: int, layout: str) -> float:
    """The accelerated engines' tier_read_gbps on one host (TP8: one engine), bytes / s."""
    rows = _query(db, "SELECT key, value FROM host_fact WHERE run_id = ? AND key LIKE ?",
                  rid, f"engine accelerated {layout}#%")
    latest = {key: json.loads(v) if isinstance(v, str) else v for key, v in rows}
    return sum(float(v["card"]["gate_sim"]["tier_read_gbps"]) for v in latest.values()) * 1e9


def test_the_plan_changes_no_verdict(site: Path, store: Store) -> None:
    """The same G3 section built with and without G2's figures: the same badge, criteria
    and findings; only the plan part differs."""
    rid, _ = _g3(site / "gate.db")
    frames = load_run(store, rid)
    t, fonts = translator("en"), choose_fonts("en")
    with_plan = build_g3(frames, Context(t=t, fonts=fonts, store=store))
    without = build_g3(frames, Context(t=t, fonts=fonts))
    assert with_plan.criteria == without.criteria
    assert with_plan.findings == without.findings
    assert with_plan.section.badge == without.section.badge
    assert isinstance(with_plan.section, G3Section) and isinstance(without.section, G3Section)
    assert with_plan.section.plan is not None and with_plan.section.plan.table is not None
    assert without.section.plan is not None and without.section.plan.table is None


def test_without_g2s_figures_the_part_says_so_and_shows_no_number(
        demo_default: Demo, tmp_path: Path) -> None:
    copy = demo_default.copy_site(tmp_path / "site")
    db = copy / "gate.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DELETE FROM host_fact WHERE run_id IN "
                     "(SELECT id FROM run WHERE gate = 'G2')")
        conn.commit()
    rid, cfg = _g3(db)
    opened = Store(f"sqlite:///{db}")
    try:
        plan = _plan(opened, rid, "zh")
    finally:
        opened.close()
    assert plan.table is None and plan.misses == []
    assert plan.lines == [translator("zh")("g3plan.no_g2",
                                           {"campaign": cfg["campaign"]["name"]})]


# Names and units the Chinese part may show in Latin letters: the model's figures' names,
# the gates, the tools, the config key, the doc, the demo's fio target and hosts.
NAMES = {"TTFT", "p50", "G2", "G3", "fio", "gdsio", "docs", "plan", "md", "prefill_tok_s",
         "volume", "GB", "s", "c", "KV", "TP8", "TP4x2", "sim", "fx100", "gpu1", "storage1",
         "SIMULATED", "gate", "demo", "lab"}


def test_the_chinese_pdf_shows_the_part_in_chinese(site: Path, store: Store,
                                                   tmp_path: Path) -> None:
    rid, _ = _g3(site / "gate.db")
    t = translator("zh")
    out = tmp_path / "g3-zh.pdf"
    render_run_report(store, rid, out, lang="zh")
    text = subprocess.run(["pdftotext", "-layout", str(out), "-"], capture_output=True,
                          text=True, check=True).stdout
    start = text.index(t("g3plan.title"))
    part = text[start:text.index(t("h.appendix"), start)]
    assert t("g3plan.col.predicted") in part and t("g3plan.col.error") in part
    assert t("arm.accelerated") in part and "TP8" in part
    words = {w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", part)
             if not re.fullmatch(r"c\d+", w)}  # G2's cell, TP8-c8
    assert words - NAMES == set(), "English in the Chinese plan part"
