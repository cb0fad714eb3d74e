"""Render a run's or a campaign's report to files: the entry points for the CLI, `gate demo`
and scheduled runs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from harness.errors import UsageError
from harness.report.build import build_campaign_report, build_run_report
from harness.report.fonts import Fonts, choose_fonts
from harness.report.i18n import translator
from harness.report.model import Report
from harness.report.pace import fewer_collections
from harness.report.pdf_child import PdfChild
from harness.report.render import render_html, write_pdf
from harness.store.db import Store

Format = Literal["pdf", "html", "both"]
FORMATS: tuple[str, ...] = ("pdf", "html", "both")


def _targets(out: Path, fmt: str) -> list[Path]:
    """`-o report.pdf --format both` writes report.pdf and report.html."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown report format {fmt!r}", key="--format",
                         hint="choose pdf, html or both")
    suffixes = {"pdf": [".pdf"], "html": [".html"], "both": [".pdf", ".html"]}[fmt]
    base = out.with_suffix("") if out.suffix.lower() in (".pdf", ".html", ".htm") else out
    if len(suffixes) == 1 and out.suffix.lower() in (".pdf", ".html", ".htm"):
        return [out]
    return [base.with_name(base.name + s) for s in suffixes]


def write_report(report: Report, out: Path, fmt: str,
                 child: PdfChild | None = None) -> list[Path]:
    """Write the report in `fmt`; a PDF through `child` when given (started before the
    build, harness/report/pdf_child.py), else here."""
    targets = _targets(out, fmt)
    parent = targets[0].parent
    if not parent.is_dir():
        raise UsageError(f"directory {parent} does not exist", key="-o")
    html = render_html(report, translator(report.lang))
    written = []
    for target in targets:
        if target.suffix == ".pdf":
            if child is None or not child.write(html, target):
                write_pdf(html, target)
        else:
            target.write_text(html, encoding="utf-8")
        written.append(target)
    return written


@contextmanager
def _pdf_child(fmt: str, fonts: Fonts) -> Iterator[PdfChild | None]:
    """A PDF writer forked before the build where a PDF is asked for (None: written
    here); never left running."""
    child = PdfChild.start(fonts.css_stack()) if fmt in ("pdf", "both") else None
    if child is None:
        yield None
        return
    with child:
        yield child


def _with_logo(report: Report, logo: str | None) -> Report:
    """The site's logo (a data: URI from LoadedConfig.logo_uri) on the first page. It
    comes from the config at hand, not from the store: a run records the logo's path,
    and a report is often rendered where that path means nothing."""
    return report.model_copy(update={"logo": logo}) if logo else report


@fewer_collections()  # a quarter of the CPU otherwise (harness/report/pace.py)
def render_run_report(store: Store, run_id: int, out: Path, lang: str = "en",
                      fmt: str = "pdf", logo: str | None = None) -> list[Path]:
    """Render one run's report to `out` (suffix replaced per format); returns the paths."""
    _targets(out, fmt)
    t = translator(lang)
    fonts = choose_fonts(lang)
    with _pdf_child(fmt, fonts) as child:
        report = build_run_report(store, run_id, t, fonts)
        return write_report(_with_logo(report, logo), out, fmt, child)


@fewer_collections()  # a quarter of the CPU otherwise (harness/report/pace.py)
def render_campaign_report(store: Store, campaign: str, out: Path, lang: str = "en",
                           fmt: str = "pdf", logo: str | None = None) -> list[Path]:
    """Render a campaign's report (latest run of each gate, trends) to `out`."""
    _targets(out, fmt)
    t = translator(lang)
    fonts = choose_fonts(lang)
    with _pdf_child(fmt, fonts) as child:
        report = build_campaign_report(store, campaign, t, fonts)
        return write_report(_with_logo(report, logo), out, fmt, child)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "report"


def store_dir(store: Store) -> Path:
    """Where reports go by default: next to a SQLite store, else the current directory."""
    path = store.file()
    return path.parent if path is not None else Path.cwd()


def default_name(*, campaign: str, gate: str | None = None, run_id: int | None = None,
                 lang: str = "en", when: float | None = None) -> str:
    """gate-report-<campaign>[-<gate>-run<id>]-<YYYYMMDD>[-zh]: the date keeps weekly
    scheduled reports side by side."""
    day = time.strftime("%Y%m%d", time.gmtime(when if when is not None else time.time()))
    parts = ["gate-report", _safe(campaign)]
    if run_id is not None:
        parts += [_safe(gate or "run"), f"run{run_id}"]
    parts.append(day)
    if lang != "en":
        parts.append(lang)
    return "-".join(parts)
