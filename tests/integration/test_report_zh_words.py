"""The Chinese report is whole in Chinese (issue 27 item 6): rendered from the store of
every demo scenario the scenario tests already made (tests/demo_fixtures.py, no extra
demo run), it has no ASCII word but those no language owns (units, product, tool and
engine names, the verdict tokens kept for auditors: tests/report_support/zh_words.py
ALLOWED, each with why) and those the site wrote or its tools printed, read from the
store (the run's config and arguments, host names, the hosts' facts)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from report_support import zh_words

if TYPE_CHECKING:
    from demo_fixtures import Demo

pytest_plugins = ["demo_fixtures"]
pytestmark = pytest.mark.slow

SCENARIOS = ("demo_default", "demo_null", "demo_broken_baseline", "demo_bad_arrival")


def _campaign(demo: Demo) -> str:
    return str(yaml.safe_load((demo.site / "gate.yaml").read_text())["campaign"]["name"])


def _render(demo: Demo, out: Path, *args: str) -> None:
    done = demo.gate("report", *args, "--lang", "zh", "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr


def _stray(demo: Demo, html: Path) -> dict[str, str]:
    allowed = zh_words.site_words(demo.site / "gate.db")
    return zh_words.stray(zh_words.visible_text(html.read_text()), allowed)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_zh_campaign_report_has_no_english_words(scenario: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    demo: Demo = request.getfixturevalue(scenario)
    _render(demo, tmp_path / "report.html", "--campaign", _campaign(demo), "--format", "html")
    stray = _stray(demo, tmp_path / "report.html")
    assert not stray, "English in the zh report (word: where):\n" + "\n".join(
        f"{w}: {where}" for w, where in sorted(stray.items()))


def test_the_zh_site_report_has_no_english_words(demo_default: Demo, tmp_path: Path) -> None:
    _render(demo_default, tmp_path / "fleet.html", "--fleet", "--format", "html")
    stray = _stray(demo_default, tmp_path / "fleet.html")
    assert not stray, stray


def test_the_zh_pdf_says_nothing_its_html_does_not(demo_default: Demo, tmp_path: Path) -> None:
    """The PDF adds the page margins (stamp, footer, page numbers) to the HTML's words:
    none of them may be English either. Every ASCII word of the PDF is one the HTML
    check saw (all of its text, the glossary's English column too), a piece of one (a
    long id broken across a narrow column's lines), or one allowed."""
    _render(demo_default, tmp_path / "report.pdf", "--campaign", _campaign(demo_default),
            "--format", "both")
    html = (tmp_path / "report.html").read_text()
    # all of the HTML's text; hyphens out: the PDF breaks "sign-off" as "sign-" / "off",
    # which pdftotext joins as "signoff"
    seen = " ".join(zh_words.visible_text(html, every=True)).replace("-", "")
    pdf = subprocess.run(["pdftotext", str(tmp_path / "report.pdf"), "-"],
                         capture_output=True, text=True, check=True).stdout
    allowed = zh_words.site_words(demo_default.site / "gate.db")
    stray = {w: where for w, where in zh_words.stray(pdf.split("\n"), allowed).items()
             if w not in seen}
    assert not stray, stray
    assert "SIMULATED" in pdf and "报告" in pdf
