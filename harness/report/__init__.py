"""Customer reports: store -> pandas frames -> typed model -> Jinja2 HTML -> WeasyPrint PDF.

Import the heavy machinery lazily: `from harness.report import render_run_report` costs
nothing until it is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.store.db import Store


def render_run_report(store: Store, run_id: int, out: Path, lang: str = "en",
                      fmt: str = "pdf", logo: str | None = None) -> list[Path]:
    from harness.report.api import render_run_report as impl

    return impl(store, run_id, out, lang, fmt, logo=logo)


def render_campaign_report(store: Store, campaign: str, out: Path, lang: str = "en",
                           fmt: str = "pdf", logo: str | None = None) -> list[Path]:
    from harness.report.api import render_campaign_report as impl

    return impl(store, campaign, out, lang, fmt, logo=logo)


__all__ = ["render_campaign_report", "render_run_report"]
