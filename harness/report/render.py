"""Render the report model: Jinja2 (autoescape on, StrictUndefined) -> one self-contained
HTML file (CSS inline, plots as SVG data URIs) -> PDF with WeasyPrint.

Templates see only the model and the translator; the SIMULATED stamp and the footer reach
every page through CSS string-set into @page margin boxes, so their text stays
HTML-escaped like every other string.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
from markupsafe import Markup

from harness.report.i18n import Translator
from harness.report.model import Report
from harness.report.resources import read_text

_UNSAFE_CSS = re.compile(r"[^\w \"',.-]", re.UNICODE)


def environment() -> jinja2.Environment:
    def load(name: str) -> str:
        return read_text("templates", *name.split("/"))

    return jinja2.Environment(loader=jinja2.FunctionLoader(load), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True)


def stylesheet(report: Report) -> Markup:
    """The shipped CSS plus the font stack (font names sanitised: they come from the OS)."""
    css = read_text("report.css")
    stack = _UNSAFE_CSS.sub("", report.font_stack)
    return Markup(css + f"\nhtml, body, table, pre {{ font-family: {stack}; }}\n"
                  f"@page {{ @top-center {{ font-family: {stack}; }}"
                  f" @bottom-left {{ font-family: {stack}; }} }}\n")


def render_html(report: Report, t: Translator) -> str:
    template = environment().get_template("report.html.j2")
    return template.render(r=report, t=t, css=stylesheet(report))


def write_pdf(html: str, path: Path) -> None:
    """Everything a report needs is inline: WeasyPrint may fetch data: URIs and nothing
    else (air-gapped sites; a stray URL in a string must never reach the network)."""
    import weasyprint
    from weasyprint.urls import URLFetcher

    fetcher = URLFetcher(allowed_protocols=("data",))
    weasyprint.HTML(string=html, base_url=None, url_fetcher=fetcher).write_pdf(str(path))
