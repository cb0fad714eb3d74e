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
    assert part.badges[0].marks == ["PARTIAL: 2 of 4 checks (50 %)"] and not part.badges[0].counts
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
    assert empty.criteria[0].estimate == "no checks recorded"


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
    # the config is a key / value table in the appendix (issue 16), secrets redacted
    assert "workload.max_tokens</td><td>128" in page and "***redacted***" in page


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
    runs.finish_run(store, rid, verdict="PASS", reason="")  # as an older harness stored it
    rep = run_report(store, rid)
    assert "Benchmark (not a gate)" in rep.title and rep.sections[0].gate == "bench"
    assert rep.not_a_gate == "Benchmark (not a gate)"
    # its own badge, RECORDED: never a PASS, and no gate's badge on a bench's cover
    assert [(b.gate, b.token) for b in rep.badges] == [("benchmark", "RECORDED")]
    assert rep.criteria == [] and rep.findings == []
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


# -- page 1: decision settings, arms, attempts, sign-offs (weakened runs need a reviewer) --
def test_weakened_signed_run_reads_pass_signed_for_its_weaker_settings(
        filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rid = ids["attempts_weakened"]
    rep = run_report(store, rid)
    g3 = rep.badges[2]
    assert (g3.token, g3.word, g3.run_id) == ("PASS", "PASS (signed)", rid)
    assert "signed by a reviewer" in g3.marks
    (line,) = rep.accepted
    assert line.startswith(f"G3 run {rid} counts as PASS (signed): reviewer Dr. Li "
                           "(as li@site-jump) signed it on ")
    assert ("accepting decision settings weaker than the defaults (gates.g3.confidence 0.9 "
            "instead of 0.95; gates.g3.evidence.min_external_hit_share 0.4 instead of 0.5)."
            ) in line
    assert "above" not in line  # what was accepted is the weaker settings, not a band
    (s,) = rep.signoffs
    assert (s.name, s.who, s.counts) == ("Dr. Li", "li@site-jump", True)
    assert s.accepts == "decision settings weaker than the defaults"
    assert not [f for f in rep.findings if f.gate == "G3"]
    (settings,) = rep.settings
    assert settings.run_id == rid
    assert [(c.key, c.value, c.default, c.weakened) for c in settings.changes] == [
        ("gates.g3.confidence", "0.9", "0.95", True),
        ("gates.g3.evidence.min_external_hit_share", "0.4", "0.5", True),
        ("gates.g3.bootstrap", "4000", "2000", False)]
    assert settings.changes[0].why == "confidence of the decision's intervals"
    # What was set on the command line is named, a secret's value never.
    assert settings.overrides == ["gates.g3.bootstrap=4000", "site.hf_token=***redacted***"]
    (appendix,) = [a for a in rep.appendix.runs if a.run_id == rid]
    assert appendix.overrides == ("--set gates.g3.bootstrap=4000 "
                                  "--set site.hf_token=***redacted***")
    assert len(appendix.uid) == 32
    zh = run_report(store, rid, "zh")
    assert zh.badges[2].word == "通过，已签核 (PASS, signed)"
    assert zh.settings[0].changes[0].why == "判定区间的置信水平"
    assert "以 li@site-jump 执行" in zh.accepted[0] and "弱于默认值的判定设置" in zh.accepted[0]


def test_weakened_and_above_band_sign_off_names_both(
        filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["weak_above_band"])
    assert rep.badges[2].word == "PASS (signed)"
    (line,) = rep.accepted
    assert "accepting a throughput gain above the band top (40.0 %) and decision settings " \
           "weaker than the defaults (gates.g3.confidence 0.9 instead of 0.95;" in line
    gain = next(c for c in rep.criteria if c.criterion.startswith("Throughput gain"))
    assert gain.result == "PASS (signed)"


def test_unsigned_weakened_run_says_it_waits_for_a_reviewer(
        filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rid = ids["weak_unsigned"]
    rep = run_report(store, rid)
    g3 = rep.badges[2]
    assert g3.token == "INCONCLUSIVE" and "needs a reviewer's sign-off" in g3.marks
    assert rep.accepted == []
    (finding,) = [f for f in rep.findings if f.gate == "G3"]
    assert finding.token == "INCONCLUSIVE"
    assert finding.text == (
        f"Run {rid} passed its cells and checks with decision settings weaker than the "
        "defaults (gates.g3.confidence 0.9 instead of 0.95; "
        "gates.g3.evidence.min_external_hit_share 0.4 instead of 0.5); it counts as "
        f"INCONCLUSIVE until a reviewer signs it off (gate signoff {rid} --role reviewer).")


def test_a_sign_off_before_the_result_does_not_count(
        filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["resumed"])
    g3 = rep.badges[2]
    assert g3.token == "INCONCLUSIVE" and g3.word == "INCONCLUSIVE"
    assert "signed by a reviewer" not in g3.marks
    assert "needs a reviewer's sign-off" in g3.marks
    assert rep.accepted == []
    (s,) = rep.signoffs
    assert not s.counts and s.accepts == ""
    page = render_html(rep, translator("en"))
    assert "Made before the run&#39;s result: does not count." in page


def test_arms_show_allowed_differences_with_their_patterns(
        filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["attempts_weakened"])
    (arms,) = rep.arms
    assert arms.run_id == ids["attempts_weakened"] and arms.patterns == fill.DIFFERS_BY
    (group,) = arms.layouts  # TP8 and TP4x2 differed alike: one group
    assert group.layouts == ["TP8", "TP4x2"] and group.token == "PASS" and not group.notes
    rows = {d.key: d for d in group.differences}
    assert set(rows) == {"argv:--kv-transfer-config", "env:LMCACHE_CHUNK_SIZE",
                         "env:LMCACHE_CONFIG_FILE"}
    kv = rows["argv:--kv-transfer-config"]
    assert (kv.baseline, kv.allowed_by, kv.instance) == ("absent", "argv:--kv-transfer-config",
                                                         None)
    assert kv.accelerated.startswith('{"kv_conne') and "…" in kv.accelerated
    assert len(kv.accelerated) <= 30 and kv.accelerated.endswith('":{}}')
    assert (rows["env:LMCACHE_CHUNK_SIZE"].accelerated,
            rows["env:LMCACHE_CHUNK_SIZE"].allowed_by) == ("256", "env:LMCACHE_*")
    assert group.ignored == ["env:INVOCATION_ID", "env:PWD"]
    page = render_html(rep, translator("en"))
    for secret in ("sk-live-SECRETKEY", "hf_abcdefSECRET"):
        assert secret not in page
    # a run whose engines were never read says so instead of showing nothing
    assert run_report(store, ids["signed"]).arms[0].layouts == []


def test_arms_show_a_blocking_difference_as_error(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    rep = run_report(store, ids["attempts_blocked"])
    (arms,) = rep.arms
    by_layout = {tuple(g.layouts): g for g in arms.layouts}
    assert set(by_layout) == {("TP8",), ("TP4x2",)}
    assert by_layout[("TP8",)].token == "PASS"
    bad = by_layout[("TP4x2",)]
    assert bad.token == "ERROR"
    blocking = [d for d in bad.differences if not d.allowed_by]
    assert [(d.key, d.baseline, d.accelerated, d.instance) for d in blocking] == [
        ("argv:--gpu-memory-utilization", "0.80", "0.90", None),
        ("server:cache_config.gpu_memory_utilization", "0.80", "0.90", None)]
    assert bad.differences[:2] == blocking  # blocking rows first
    assert {d.key for d in bad.differences if d.allowed_by} == {
        "argv:--kv-transfer-config", "env:LMCACHE_CHUNK_SIZE", "env:LMCACHE_CONFIG_FILE"}
    assert rep.settings[0].changes == []  # every setting at its default


def test_every_attempt_of_the_gate_is_listed(filled: tuple[Store, dict[str, int]]) -> None:
    store, ids = filled
    first, blocked, weak = (ids["attempts_first"], ids["attempts_blocked"],
                            ids["attempts_weakened"])
    rep = run_report(store, weak)
    (g3,) = rep.attempts
    assert g3.gate == "G3"
    assert [(a.run_id, a.token, a.word, a.marks, a.this) for a in g3.attempts] == [
        (first, "STOP-LOSS", "STOP-LOSS", [], False),
        (blocked, "ERROR", "ERROR", ["FORCED"], False),
        (weak, "PASS", "PASS (signed)", [], True)]  # the custom-suite run is no attempt
    assert g3.attempts[0].date < g3.attempts[1].date < g3.attempts[2].date
    camp = build_campaign_report(store, "attempts-1", translator("en"), choose_fonts("en"))
    assert camp.badges[2].run_id == weak  # a later custom-suite run never stands for G3
    assert [a.run_id for a in camp.attempts[0].attempts] == [first, blocked, weak]
    assert run_report(store, ids["aborted"]).attempts[0].attempts[0].marks == ["ABORTED"]
    assert run_report(store, ids["sim_G3"]).attempts[0].attempts[0].marks == ["SIMULATED"]
    assert run_report(store, ids["partial"]).attempts[0].attempts[0].marks == ["PARTIAL"]
    zh = run_report(store, blocked, "zh").attempts[0].attempts[1]
    assert (zh.word, zh.marks, zh.this) == ("错误 (ERROR)", ["强制运行 (FORCED)"], True)
