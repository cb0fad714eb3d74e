"""The report model and HTML built from a real SQLite store filled through the store API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from markupsafe import escape
from report_support import fill

from harness.report.build import build_campaign_report, build_run_report
from harness.report.fonts import choose_fonts
from harness.report.i18n import translator
from harness.report.model import SCHEMA_VERSION, Report
from harness.report.render import render_html
from harness.store import writer
from harness.store.db import Store


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, int]]]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('report') / 'gate.db'}")
    ids = fill.scenarios(store)
    yield store, ids
    store.close()


def run_report(store: Store, run_id: int, lang: str = "en") -> Report:
    return build_run_report(store, run_id, translator(lang), choose_fonts(lang))


def test_g3_criteria_are_the_stored_cells(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["sim_G3"])
    assert rep.schema_version == SCHEMA_VERSION and rep.simulated
    assert rep.title.startswith("SIMULATED")
    cells = writer.cells(store, ids["sim_G3"])
    assert len(cells) == 3
    for cell in cells:
        where = f"{cell.layout} · c={cell.tier}"
        drop = next(c for c in rep.criteria if c.criterion == f"TTFT p50 drop · {where}")
        assert drop.estimate == f"{cell.drop * 100:.1f} %"
        assert drop.ci == f"[{cell.drop_lo * 100:.1f} %, {cell.drop_hi * 100:.1f} %]"
        assert drop.n == f"{cell.n_baseline} / {cell.n_accelerated}"
        assert drop.token == "PASS" and drop.threshold == "≥ 25.0 %"
        gain = next(c for c in rep.criteria if c.criterion == f"Throughput gain · {where}")
        assert gain.estimate == f"{cell.gain * 100:.1f} %"
    assert rep.ci_label == "95 % CI"
    assert [b.token for b in rep.badges] == ["PASS", "PASS", "PASS", "NOT_RUN"]
    section = rep.sections[0]
    assert section.kind == "g3"
    layouts = {lay.layout: lay for lay in section.layouts}  # type: ignore[attr-defined]
    assert set(layouts) == {"TP8", "TP4x2"}
    assert len(layouts["TP8"].plots) == 2  # CDF + by-concurrency panels
    assert section.storage is not None and section.evidence is not None  # type: ignore[attr-defined]
    share_col = section.evidence.columns.index("External hit share")  # type: ignore[attr-defined]
    shares = {row[2]: row[share_col] for row in section.evidence.rows}  # type: ignore[attr-defined]
    assert shares == {"accelerated": "93.0 %", "baseline": "0.0 %"}
    assert [s.role for s in rep.signoffs] == ["customer"]


def test_signed_above_band_shows_pass_signed(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["signed"])
    g3 = rep.badges[2]
    assert g3.token == "PASS" and g3.word == "PASS (signed)"
    assert "signed by a reviewer" in g3.marks
    gain = next(c for c in rep.criteria if c.criterion.startswith("Throughput gain"))
    assert gain.result == "PASS (signed)"
    assert rep.signoffs[0].role == "reviewer" and rep.signoffs[0].name == "Dr. Wang <reviewer>"
    assert not [f for f in rep.findings if f.gate == "G3"]
    unsigned = run_report(store, ids["unsigned"])
    assert unsigned.badges[2].token == "INCONCLUSIVE"
    assert any("above band: needs sign-off" in f.text for f in unsigned.findings)
    zh = run_report(store, ids["signed"], "zh")
    assert zh.badges[2].word == "通过，已签核 (PASS, signed)"


def test_stop_loss_reason_in_plain_words_and_forced(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["stop_forced"])
    assert rep.badges[2].token == "STOP-LOSS" and "FORCED" in rep.badges[2].marks
    assert any(m.startswith("FORCED:") for m in rep.marks)
    stop = [f for f in rep.findings if f.token == "STOP-LOSS"]
    assert stop and stop[0].text == ("TP8 at concurrency 4: the TTFT p50 drop is 10.0 % "
                                     "(interval [6.0 %, 14.0 %]); at least 25.0 % is required.")
    zh = run_report(store, ids["stop_forced"], "zh")
    assert "要求至少 25.0 %" in next(f for f in zh.findings if f.token == "STOP-LOSS").text


def test_partial_running_aborted_empty_say_why(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    part = run_report(store, ids["partial"])
    assert part.badges[0].marks == ["PARTIAL: 2 of 4 checks"] and not part.badges[0].counts
    assert any("ran 2 of 4 checks" in m for m in part.marks)
    running = run_report(store, ids["running"])
    assert running.badges[1].token == "RUNNING"
    assert running.in_progress and "has not finished" in running.in_progress[0]
    aborted = run_report(store, ids["aborted"])
    assert aborted.badges[2].token == "ERROR"
    notes = aborted.sections[0].notes
    assert any("aborted (aborted: process gone)" in n for n in notes)
    assert any(h == "Failed infrastructure steps" for h, _ in aborted.sections[0].tables)
    assert any("No layout x tier decision" in n for n in notes)
    empty = run_report(store, ids["empty"])
    assert empty.badges[0].token == "ERROR"
    assert any("No checks were recorded" in n for n in empty.sections[0].notes)
    assert empty.criteria[0].estimate == "0 of 0 PASS"


def test_no_evidence_is_said(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["noev"])
    sec = rep.sections[0]
    assert sec.evidence is None and sec.storage is None  # type: ignore[attr-defined]
    page = render_html(rep, translator("en"))
    assert "No evidence recorded" in page and "No storage read bandwidth" in page


def test_hostile_strings_are_escaped(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    for rid in (ids["hostile_G1"], ids["hostile_G3"]):
        page = render_html(run_report(store, rid), translator("en"))
        for raw in (fill.HOSTILE_SITE, fill.HOSTILE_CUSTOMER, fill.HOSTILE_HOST):
            assert raw not in page
        assert "<script>" not in page and "<b>bold</b>" not in page
        assert str(escape(fill.HOSTILE_SITE)) in page
        assert "<img src=x" not in page
    page = render_html(run_report(store, ids["hostile_G1"]), translator("en"))
    assert str(escape(fill.HOSTILE_HOST)) in page and str(escape(fill.HOSTILE_CUSTOMER)) in page


def test_secrets_never_reach_the_page(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    page = render_html(run_report(store, ids["sim_G3"]), translator("en"))
    for secret in ("hunter2-secret", "pp-123", "hf_abcdefSECRET", "dbpass99", "abc123"):
        assert secret not in page
    assert "&#34;max_tokens&#34;: 128" in page and "***redacted***" in page


def test_campaign_report_and_weekly_trend(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    t, fonts = translator("en"), choose_fonts("en")
    camp = build_campaign_report(store, "acme-2026q1", t, fonts)
    assert [b.token for b in camp.badges] == ["PASS", "PASS", "PASS", "PASS"]
    assert [s.gate for s in camp.sections] == ["G1", "G2", "G3", "G4"]
    g4 = camp.sections[3]
    assert g4.plots and any(h == "Measured load phases" for h, _ in g4.tables)
    weekly = build_campaign_report(store, "weekly-1", t, fonts)
    assert len(weekly.trends) == 1
    trend = weekly.trends[0]
    assert len(trend.table.columns) == 4  # metric + three weekly runs
    drop_row = next(r for r in trend.table.rows if r[0].startswith("TTFT p50 drop"))
    assert drop_row[1:] == ["38.0 %", "37.0 %", "30.0 % ▼"]
    assert any("37.0 % in run" in line and "30.0 %" in line for line in trend.regressions)
    assert trend.plot is not None
    single = run_report(store, ids["weekly_1"])
    assert single.trends and len(single.trends[0].table.columns) == 3  # runs up to this one


def test_a_bench_run_without_gate_renders(filled: tuple[Store, dict[str, int]]) -> None:
    from harness.store import runs

    store, _ = filled
    rid = runs.start_run(store, runs.NewRun(campaign="bench-1", site="acme-sh",
                                            customer="ACME", kind="bench"))
    bid = writer.start_benchmark(store, rid, arm="accelerated", phase="measured")
    writer.insert_requests(store, bid, [{"idx": 0, "scheduled": 0.0, "ttft": 0.5,
                                         "output_tokens": 16}])
    writer.finish_benchmark(store, bid, status="FINISHED", duration=2.0, summary={})
    runs.finish_run(store, rid, verdict="PASS", reason="")
    rep = run_report(store, rid)
    assert "bench" in rep.title and rep.sections[0].gate == "bench"
    assert [b.token for b in rep.badges] == ["NOT_RUN"] * 4
    phases = dict(rep.sections[0].tables)["Measured load phases"]
    assert phases.rows[0][-3:] == ["0.500 s", "0.500 s", "8.0 tok/s"]
    assert "bench" in render_html(rep, translator("en"))


def test_missing_run_and_campaign_are_usage_errors(filled: tuple[Store, dict[str, int]],
                                                   tmp_path: Path) -> None:
    from harness.errors import UsageError

    store, _ = filled
    with pytest.raises(UsageError, match="no run 99999"):
        run_report(store, 99999)
    with pytest.raises(UsageError, match="no campaign"):
        build_campaign_report(store, "nope", translator("en"), choose_fonts("en"))
