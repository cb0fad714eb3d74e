"""Real PDFs, read back with pdftotext / pdftoppm (poppler): what the customer keeps."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_support import fill

from harness.report import render_campaign_report, render_run_report
from harness.store import writer
from harness.store.db import Store


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, int]]]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('pdf') / 'gate.db'}")
    ids = fill.scenarios(store)
    yield store, ids
    store.close()


def pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))  # type: ignore[union-attr]


def text(pdf: Path, page: int | None = None) -> str:
    args = ["pdftotext", "-layout"]
    if page is not None:
        args += ["-f", str(page), "-l", str(page)]
    out = subprocess.run([*args, str(pdf), "-"], capture_output=True, text=True, check=True)
    return out.stdout


def flat(s: str) -> str:
    return " ".join(s.split())


def test_simulated_campaign_pdf_stamped_on_every_page(filled: tuple[Store, dict[str, int]],
                                                      tmp_path: Path) -> None:
    store, ids = filled
    written = render_campaign_report(store, "acme-2026q1", tmp_path / "camp", "en", "both")
    pdf, page_html = written
    assert pdf.suffix == ".pdf" and page_html.suffix == ".html"
    n = pages(pdf)
    assert n >= 5
    for p in range(1, n + 1):
        assert "SIMULATED" in text(pdf, p), f"page {p} lacks the SIMULATED stamp"
    first = flat(text(pdf, 1))
    assert "SIMULATED: acme-sh: campaign acme-2026q1 report" in first
    for gate in ("G1", "G2", "G3", "G4"):
        assert f"{gate} ·" in first
    assert first.count("PASS") >= 4
    whole = flat(text(pdf))
    for cell in writer.cells(store, ids["sim_G3"]):
        assert f"{cell.drop * 100:.1f} %" in whole
        assert f"[{cell.drop_lo * 100:.1f} %, {cell.drop_hi * 100:.1f} %]" in whole
        assert f"{cell.ttft_p50_baseline:.3f} s" in whole
    assert "Chen Jing" in first and "accepted at the weekly review" in first
    assert "SIMULATED" in page_html.read_text()


def test_chinese_pdf_has_chinese_verdicts_with_tokens(filled: tuple[Store, dict[str, int]],
                                                      tmp_path: Path) -> None:
    store, ids = filled
    (pdf,) = render_run_report(store, ids["stop_forced"], tmp_path / "stop-zh.pdf", "zh", "pdf")
    first = flat(text(pdf, 1))
    assert "止损 (STOP-LOSS)" in first
    assert "强制运行 (FORCED)" in first
    assert "TTFT p50 降幅" in first and "要求至少 25.0 %" in first
    assert "10.0 %" in first and "[6.0 %, 14.0 %]" in first
    (signed,) = render_run_report(store, ids["signed"], tmp_path / "signed-zh.pdf", "zh", "pdf")
    s1 = flat(text(signed, 1))
    assert "通过，已签核" in s1 and "(PASS, signed)" in s1 and "Dr. Wang <reviewer>" in s1
    assert "评审人" in s1


def test_english_marks_partial_forced_signed(filled: tuple[Store, dict[str, int]],
                                             tmp_path: Path) -> None:
    store, ids = filled
    (part,) = render_run_report(store, ids["partial"], tmp_path / "part.pdf", "en", "pdf")
    p1 = flat(text(part, 1))
    assert "PARTIAL: 2 of 4 checks" in p1 and "never counts as the gate's verdict" in p1
    (forced,) = render_run_report(store, ids["stop_forced"], tmp_path / "f.pdf", "en", "pdf")
    f1 = flat(text(forced, 1))
    assert "STOP-LOSS" in f1 and "FORCED: G3 run" in f1
    assert "the TTFT p50 drop is 10.0 %" in f1
    (signed,) = render_run_report(store, ids["signed"], tmp_path / "s.pdf", "en", "pdf")
    s1 = flat(text(signed, 1))
    assert "PASS (signed)" in s1 and "reviewer Dr. Wang <reviewer>" in s1


@pytest.mark.parametrize("name,why", [
    ("empty", "No checks were recorded for this run"),
    ("running", "Run in progress"),
    ("aborted", "was aborted (aborted: process gone)"),
])
def test_failed_and_unfinished_runs_render_and_say_why(filled: tuple[Store, dict[str, int]],
                                                       tmp_path: Path, name: str,
                                                       why: str) -> None:
    store, ids = filled
    (pdf,) = render_run_report(store, ids[name], tmp_path / f"{name}.pdf", "en", "pdf")
    assert why in flat(text(pdf))


def test_page_one_renders_to_png_in_both_languages(filled: tuple[Store, dict[str, int]],
                                                   tmp_path: Path) -> None:
    store, ids = filled
    for lang in ("en", "zh"):
        (pdf,) = render_run_report(store, ids["sim_G3"], tmp_path / f"g3-{lang}.pdf", lang,
                                   "pdf")
        subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "1", str(pdf),
                        str(tmp_path / f"page1-{lang}")], check=True)
        png = next(tmp_path.glob(f"page1-{lang}*.png"))
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_page_one_shows_settings_arms_attempts_and_sign_off_in_english(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    store, ids = filled
    first, blocked, weak, custom = (ids["attempts_first"], ids["attempts_blocked"],
                                    ids["attempts_weakened"], ids["attempts_custom"])
    (pdf,) = render_run_report(store, weak, tmp_path / "weak.pdf", "en", "pdf")
    p1 = flat(text(pdf, 1))
    assert "PASS (signed)" in p1
    assert (f"G3 run {weak} counts as PASS (signed): reviewer Dr. Li (as li@site-jump) signed "
            "it on") in p1
    assert "accepting decision settings weaker than the defaults (gates.g3.confidence 0.9 " \
           "instead of 0.95;" in p1
    assert "above band" not in p1 and "band top (" not in p1
    # every attempt, oldest first; the custom-suite run is none
    assert (f"Attempts of G3: 3 — #{first} STOP-LOSS 20") in p1
    assert f"#{blocked} ERROR (FORCED) 20" in p1
    assert f"#{weak} PASS (signed) 20" in p1 and "(this report)" in p1
    assert f"#{custom} " not in p1
    # decision settings off their defaults, the weaker ones marked
    assert "Decision settings that differ from the defaults" in p1
    assert p1.count("weaker than the default: needs a reviewer's sign-off") == 2
    assert "gates.g3.confidence = 0.9 (default 0.95): confidence of the decision's" in p1
    assert "gates.g3.bootstrap = 4000 (default 2000): bootstrap resamples per interval" in p1
    # what differed between the arms, and what allowed it
    assert "What differed between the arms" in p1
    assert ("allowed to differ (arms.accelerated.differs_by): argv:--kv-transfer-config, "
            "env:LMCACHE_*") in p1
    assert "env:LMCACHE_CHUNK_SIZE absent 256 env:LMCACHE_*" in p1
    assert "TP8, TP4x2" in p1 and "not allowed" not in p1
    # the sign-off with who ran it, where, and what it accepts
    assert "Dr. Li (as li@site-jump)" in p1
    assert "Accepts: decision settings weaker than the defaults" in p1
    (bad,) = render_run_report(store, blocked, tmp_path / "blocked.pdf", "en", "pdf")
    b1 = flat(text(bad, 1))
    assert "argv:--gpu-memory-utilization 0.80 0.90 not allowed: ERROR" in b1
    assert "G3 run" in b1 and "every decision setting is at its default." in b1
    assert f"#{blocked} ERROR (FORCED) 20" in b1


def squeeze(s: str) -> str:
    """Without any whitespace: Chinese lines wrap anywhere, even inside a word."""
    return "".join(s.split())


def test_page_one_shows_settings_arms_attempts_and_sign_off_in_chinese(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    store, ids = filled
    blocked, weak = ids["attempts_blocked"], ids["attempts_weakened"]
    (pdf,) = render_run_report(store, weak, tmp_path / "weak-zh.pdf", "zh", "pdf")
    p1 = squeeze(text(pdf, 1))
    for expected in (
            f"G3 的运行 {weak} 计为通过，已签核 (PASS, signed)："
            "评审人 Dr. Li（以 li@site-jump 执行）",
            "接受了弱于默认值的判定设置（gates.g3.confidence 为 0.9，而非默认的 0.95；"
            "gates.g3.evidence.min_external_hit_share 为 0.4，而非默认的 0.5）。",
            "G3 的全部运行：3 次", "止损 (STOP-LOSS)",
            f"#{blocked} 错误 (ERROR)【强制运行 (FORCED)】", "(本报告)",
            "与默认值不同的判定设置",
            "gates.g3.confidence = 0.9（默认 0.95）：判定区间的置信水平",
            "gates.g3.bootstrap = 4000（默认 2000）：每个区间的自助法重抽样次数",
            "两组之间的差异", "允许依据", "env:LMCACHE_CHUNK_SIZE 无 256 env:LMCACHE_*",
            "Dr. Li（以 li@site-jump 执行）", "接受：弱于默认值的判定设置"):
        assert squeeze(expected) in p1, expected
    assert p1.count("弱于默认值：需要评审人签核") == 2
    (bad,) = render_run_report(store, blocked, tmp_path / "blocked-zh.pdf", "zh", "pdf")
    b1 = squeeze(text(bad, 1))
    assert "argv:--gpu-memory-utilization" in b1 and "不允许：错误(ERROR)" in b1
    assert "所有判定设置均为默认值。" in b1


def test_a_running_run_is_stamped_on_every_page_and_aborted_is_said_on_page_one(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    """Issue 16: a RUNNING run's rows are not a result, on any page; an aborted run's
    page 1 says ABORTED, not only ERROR."""
    store, ids = filled
    (pdf,) = render_run_report(store, ids["running"], tmp_path / "run.pdf", "en", "pdf")
    for p in range(1, pages(pdf) + 1):
        assert "IN PROGRESS: not a result" in text(pdf, p), f"page {p} lacks the stamp"
    (zh,) = render_run_report(store, ids["running"], tmp_path / "run-zh.pdf", "zh", "pdf")
    assert "进行中：并非结果" in text(zh, 1)
    (aborted,) = render_run_report(store, ids["aborted"], tmp_path / "ab.pdf", "en", "pdf")
    assert "ABORTED" in flat(text(aborted, 1))


def test_chinese_events_say_source_and_status_in_chinese(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    """Issue 16: "action", "failed", "unreachable" stayed English in the zh report."""
    store, ids = filled
    (zh,) = render_run_report(store, ids["aborted"], tmp_path / "ab-zh.pdf", "zh", "pdf")
    z = squeeze(text(zh))
    assert squeeze("Ansible serve.yml: start engine gpu1 无法连接") in z
    assert "unreachable" not in z


def test_running_rows_are_grey_not_pass_and_an_empty_sign_off_block_is_one_line(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    """Issue 16: a RUNNING run's PASS rows say "in progress (so far PASS)" (grey), never a
    bare PASS; with no sign-off, page 1 says so in its facts table instead of a block
    that spilled onto a page of its own."""
    store, ids = filled
    (pdf,) = render_run_report(store, ids["running"], tmp_path / "run.pdf", "en", "pdf")
    whole = flat(text(pdf))
    assert "in progress (so far PASS)" in whole
    html = (tmp_path / "run.html")
    render_run_report(store, ids["running"], html, "en", "html")
    rows = re.findall(r'<tr class="tone-([a-z]+)">', html.read_text())
    assert rows and "pass" not in rows and "running" in rows
    p1 = flat(text(pdf, 1))
    assert "Sign-offs No sign-offs recorded." in p1
    (zh,) = render_run_report(store, ids["running"], tmp_path / "run-zh.pdf", "zh", "pdf")
    assert squeeze("进行中（目前为 通过 (PASS)）") in squeeze(text(zh))


def test_g3_decision_rule_is_said_once_and_n_is_apart_from_reps(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    """The rule paragraph once per run (it was repeated per cell), per cell only its
    layout, reason and look; n (base / acc) in a column of its own; both languages."""
    store, ids = filled
    (pdf,) = render_run_report(store, ids["sim_G3"], tmp_path / "g3.pdf", "en", "pdf")
    whole = flat(text(pdf))
    assert whole.count("Decision rule: PASS when the lower bound") == 1
    assert "PASS iff" not in whole and "alpha spent over 3 looks" not in whole
    assert "at look 1 of 2 (3 pairs; Lan- DeMets O'Brien-Fleming" in whole.replace(
        "Lan-DeMets", "Lan- DeMets")
    n = writer.cells(store, ids["sim_G3"])[0].n_baseline
    # n on two lines ("48 /" over "48"), then Reps, then the verdict: three cells apart
    assert re.search(rf"\b{n} / 3 PASS\b", whole)
    (zh,) = render_run_report(store, ids["sim_G3"], tmp_path / "g3-zh.pdf", "zh", "pdf")
    z = squeeze(text(zh))
    assert z.count(squeeze("判定规则：TTFT p50 降幅区间的下界不低于 25.0 %")) == 1
    assert squeeze("第 1 次查看（共 2 次；3 对；Lan-DeMets O'Brien-Fleming α 消耗函数") in z


def test_appendix_config_and_facts_are_tables_said_once(
        filled: tuple[Store, dict[str, int]], tmp_path: Path) -> None:
    """Issue 16: config as key / value rows (not pages of JSON), one configuration shown
    once, engine versions read from the engine cards, in the campaign report."""
    store, _ = filled
    pdf, _html = render_campaign_report(store, "acme-2026q1", tmp_path / "camp", "en", "both")
    appendix = flat(text(pdf)).split("Appendix: evidence", 1)[1]
    assert '"gates": {' not in appendix and "{ " not in appendix.split("Definitions")[0]
    assert "gates.g3.thresholds.ttft_p50_drop 0.25" in appendix
    assert appendix.count("The same configuration as run") >= 1


def cells(pdf: Path) -> str:
    """Page 1 in the order it was drawn: a table cell's lines together."""
    return subprocess.run(["pdftotext", "-raw", "-f", "1", "-l", "1", str(pdf), "-"],
                          capture_output=True, text=True, check=True).stdout


def test_page_one_says_the_campaign_in_one_line_every_reason_and_the_checks_counted(
        tmp_path: Path) -> None:
    """Issue 27 item 5: page 1 says the furthest gate reached and its verdict in one line,
    every reason a gate did not pass (past six a gate, how many more and the page of its
    section), and the checks counted with the skipped ones and each share, in en and zh."""
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    g1 = fill.new_run(store, "G1", campaign="reasons-1")
    bad = [(f"nvme firmware {i}", f"st{i}", "STOP-LOSS", "SU6SM005", f"SU6SM00{i}")
           for i in range(1, 10)]
    skipped = [(f"gds {i}", "gpu1", "SKIPPED", "optional", "not checkable here")
               for i in range(2)]
    fill.add_checks(store, g1, [*fill.G1_CHECKS[:3], *bad, *skipped])
    fill.finish_from_checks(store, g1)
    en, zh = (render_campaign_report(store, "acme-sh/reasons-1", tmp_path / f"r-{lang}",
                                     lang, "pdf")[0] for lang in ("en", "zh"))
    store.close()
    p1 = flat(text(en, 1))
    assert "STOP-LOSS at G1, the furthest gate reached (run 1)." in p1 and "verdict" in p1
    assert "3 PASS (21 %), 9 STOP-LOSS (64 %), 2 SKIPPED (14 %) of 14" in flat(cells(en))
    listed = [i for i in range(1, 10) if f"nvme firmware {i} on st{i}: expected" in p1]
    assert listed == [1, 2, 3, 4, 5, 6], p1  # six a gate, then how many more and where
    more = re.search(r"G1: and 3 more, page (\d+)", p1)
    assert more is not None, p1
    section = int(more.group(1))
    assert section > 1 and "G1 · arrival acceptance STOP-LOSS" in flat(text(en, section))
    assert "nvme firmware 9" in flat(text(en, section))  # the rest are there
    z1 = squeeze(text(zh, 1))
    assert squeeze("止损 (STOP-LOSS)，止于已到达的最远关口 G1（运行 1）。") in z1
    assert squeeze("共 14 项，通过 3 项（21 %），止损 9 项（64 %），跳过 2 项（14 %）") in \
        squeeze(cells(zh))
    assert f"G1：另有3条，见第{section}页" in z1
