"""G4's report section, rendered as `gate report` renders it (harness.report's entry point)
from a store filled without running a soak: the checks, the criteria said through their
stored reason codes, the windows' totals and the windows figure, in English and Chinese;
and a run that stored no window renders its checks and says so."""

from __future__ import annotations

import base64
import re
import subprocess
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from report_support import fill

from harness.report import render_run_report
from harness.report.build import build_run_report
from harness.report.fonts import choose_fonts
from harness.report.i18n import translator
from harness.report.sections import SECTIONS, builder_for
from harness.store.db import Store

HOUR = 3600.0


@pytest.fixture(scope="module")
def soaks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """long: 6 h of 60 s windows, failed requests in two windows and an engine restart;
    short: 20 min of 30 s windows, the accelerator gone from window 31 and one window's
    counters unsampled; none: a soak that stored no window."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('g4') / 'gate.db'}")
    long_rows = fill.soak_windows(360, window_s=60.0, failed={100: 2, 250: 1},
                                  restarts=(200,))
    short_rows = fill.soak_windows(40, window_s=30.0, seed=5, fallback_from=30,
                                   unsampled=(35,))
    out = {"store": store, "long_rows": long_rows, "short_rows": short_rows,
           "long": fill.g4_soak_run(store, long_rows, duration=6 * HOUR, window=60.0,
                                    baseline=HOUR, campaign="soak-long"),
           "short": fill.g4_soak_run(store, short_rows, duration=1200.0, window=30.0,
                                     baseline=300.0, simulated=True, campaign="soak-short"),
           "none": fill.g4_run_without_windows(store)}
    yield out
    store.close()


def pdf_text(pdf: Path) -> str:
    """The PDF's words in reading order (not -layout: a table cell wrapped over two lines
    stays together), with no whitespace: a Chinese cell wraps between any two characters,
    so words are looked up squeezed (`squeeze`)."""
    out = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                         check=True)
    return squeeze(out.stdout)


def squeeze(text: str) -> str:
    return "".join(text.split())


def g4_html(html: Path) -> str:
    """The G4 section of the rendered HTML (the cover and appendix left out), its text
    unescaped."""
    page = html.read_text(encoding="utf-8")
    start = page.rindex("<section", 0, page.index('id="gate-G4"'))
    return unescape(page[start:page.index("</section>", start)])


def figure_svg(section: str) -> str:
    found = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', section)
    assert len(found) == 1, "one figure in the G4 section"
    return base64.b64decode(found[0]).decode("utf-8")


def render(soaks: dict[str, Any], which: str, lang: str, tmp_path: Path) -> tuple[str, str]:
    pdf, html = render_run_report(soaks["store"], soaks[which], tmp_path / f"{which}-{lang}",
                                  lang, "both")
    return pdf_text(pdf), g4_html(html)


def totals(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The totals row's numbers as the report formats them."""
    requests = sum(r["requests"] for r in rows)
    failed = sum(sum(r["errors"].values()) for r in rows)
    return {"windows": str(len(rows)), "requests": f"{requests:,}",
            "failed": f"{failed:,} ({failed / requests * 100:.1f} %)",
            "first": f"{rows[0]['ttft_p50_s']:.3f} s", "last": f"{rows[-1]['ttft_p50_s']:.3f} s",
            "hits": f"{int(sum(r['external_hit_tokens'] or 0 for r in rows)):,}",
            "reads": f"{sum(r['device_read_bytes'] or 0 for r in rows) / 1e9:,.2f}"}


WORDS = {
    "en": {"title": "G4 · 72 h stability", "checks": "Checks",
           "criteria": "Criteria over the windows", "totals": "Window totals",
           "figure": "The soak, window by window", "names": (
               "Failed requests per window", "TTFT p50 drift", "Throughput drift",
               "Engine memory growth", "Engine restarts", "Accelerator engaged",
               "The engines' own clock agrees"),
           "hours": "hours since the soak started", "minutes": "minutes since the soak started",
           "restart": "window 201: the engine restarted (1 > 0)",
           "restart_asked": "at most 0 engine restarts",
           "fallback": "accelerator not engaged in window 31: no external-tier hits",
           "legend": ("baseline (first 1 h)", "engine restart",
                      "window with failed requests", "min engaged share (50 %)",
                      "external-tier hits", "device reads"),
           "unsampled": "not sampled", "no_windows": "No soak window was stored for this run",
           "verdict": "STOP-LOSS"},
    "zh": {"title": "G4 · 72 小时稳定性", "checks": "检查项", "criteria": "各时间窗的判据",
           "totals": "时间窗汇总", "figure": "浸泡测试逐时间窗变化", "names": (
               "每个时间窗的失败请求", "TTFT p50 漂移", "吞吐量漂移", "引擎内存增长",
               "引擎重启", "加速器持续工作", "引擎自身计时一致"),
           "hours": "自浸泡测试开始的小时数", "minutes": "自浸泡测试开始的分钟数",
           "restart": "窗口 201：引擎重启（1 > 0）",
           "restart_asked": "引擎重启不超过 0 次",
           "fallback": "加速器在窗口 31 未工作：没有外部层命中",
           "legend": ("基线期（前 1 h）", "引擎重启", "有失败请求的时间窗",
                      "最低工作比例（50 %）", "外部层命中", "设备读取"),
           "unsampled": "未采集", "no_windows": "本次运行没有存储任何浸泡测试时间窗",
           "verdict": "止损 (STOP-LOSS)"},
}


def test_g4_has_its_own_section() -> None:
    assert builder_for("G4") is SECTIONS["g4"]
    assert SECTIONS["g4"].template == "sections/g4.html.j2"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_soak_renders_its_criteria_totals_and_figure(soaks: dict[str, Any],
                                                            lang: str, tmp_path: Path) -> None:
    words = WORDS[lang]
    text, section = render(soaks, "long", lang, tmp_path)
    for key in ("title", "checks", "criteria", "totals", "figure", "verdict"):
        assert squeeze(words[key]) in text, f"{key}: {words[key]!r} not in the {lang} PDF"
    for name in words["names"]:
        assert squeeze(name) in text and name in section
    for key, value in totals(soaks["long_rows"]).items():
        assert squeeze(value) in text, f"total {key} {value!r} not in the {lang} PDF"
        assert value in section
    assert words["restart"] in section and words["restart_asked"] in section
    svg = figure_svg(section)
    assert words["hours"] in svg
    for label in words["legend"]:
        assert label in svg, f"legend {label!r} not in the {lang} figure"
    if lang == "zh":  # every word of the section said in Chinese but names and units: a
        # config key, the tokens counted, and the checks' parameters in their labels
        # ("G4 · restarts · 判据", as every gate's checks are labelled)
        prose = re.sub(r"<[^>]+>", " ", section)
        english = set(re.findall(r"\b[a-z]{4,}\b", prose))
        assert not english - {"gates", "duration", "token", *fill.G4_CRITERIA}, \
            f"English left in the zh section: {sorted(english)}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_short_soak_that_fell_back_marks_its_windows(soaks: dict[str, Any], lang: str,
                                                       tmp_path: Path) -> None:
    words = WORDS[lang]
    text, section = render(soaks, "short", lang, tmp_path)
    assert squeeze(words["criteria"]) in text and squeeze(words["totals"]) in text
    assert words["fallback"] in section
    svg = figure_svg(section)
    assert words["minutes"] in svg and words["unsampled"] in svg
    assert squeeze(totals(soaks["short_rows"])["hits"]) in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_run_without_windows_renders_its_checks_and_says_so(soaks: dict[str, Any],
                                                              lang: str,
                                                              tmp_path: Path) -> None:
    words = WORDS[lang]
    text, section = render(soaks, "none", lang, tmp_path)
    for key in ("title", "checks", "no_windows", "criteria"):  # criteria: ERROR, no window
        assert squeeze(words[key]) in text, f"{key}: {words[key]!r} not in the {lang} PDF"
    assert squeeze(words["totals"]) not in text and squeeze(words["figure"]) not in text
    assert "data:image/svg" not in section
    assert "ttft_drift cannot be judged: no window was measured" in section  # as stored
    # test_soak's words stored by an older harness (`status` for `ended`): shown as stored
    stored = "0 of 60 windows measured; the soak failed"
    assert (stored if lang == "en" else f"{stored}（原文）") in section


def test_the_section_is_built_from_the_stored_windows(soaks: dict[str, Any]) -> None:
    """The model (what the evidence pack keeps): the G4 section's tables and figure."""
    t = translator("en")
    report = build_run_report(soaks["store"], soaks["long"], t, choose_fonts("en"))
    (section,) = [s for s in report.sections if s.gate == "G4"]
    assert section.kind == "g4"
    headings = [h for h, _ in section.tables]
    assert headings[:1] == ["Checks"]
    assert headings[-2:] == ["Criteria over the windows", "Window totals"]
    criteria = dict(section.tables)["Criteria over the windows"]
    assert [r[0] for r in criteria.rows] == list(WORDS["en"]["names"])
    assert criteria.tones[4] == "STOP-LOSS"  # the restart
    assert [p.title for p in section.plots] == ["The soak, window by window"]
    none = build_run_report(soaks["store"], soaks["none"], t, choose_fonts("en"))
    (empty,) = [s for s in none.sections if s.gate == "G4"]
    assert empty.plots == [] and any("No soak window" in n for n in empty.notes)
