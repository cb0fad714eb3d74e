"""Colours mean the same in both languages (issue 27 item 6): the accelerated arm is one
colour in every figure of the English and the Chinese report. The storage figure once
coloured its series by their label, which is the arm's name in the report's language, so
the Chinese one drew the arms in the palette's first colours instead."""

from __future__ import annotations

import base64
import re

import pytest
from report_support import fill

from harness.report.build import build_run_report
from harness.report.fonts import choose_fonts
from harness.report.i18n import translator
from harness.report.plots import ARM_COLOURS
from harness.store.db import Store

SVG = "data:image/svg+xml;base64,"
COLOUR = re.compile(r"(?:stroke|fill):\s*(#[0-9a-fA-F]{6})")


def _figures(store: Store, run_id: int, lang: str) -> list[set[str]]:
    """The colours each figure of the run's section draws with, in order."""
    report = build_run_report(store, run_id, translator(lang), choose_fonts(lang))
    out = []
    for section in report.sections:
        layouts = getattr(section, "layouts", [])  # G3's figures are per layout
        storage = getattr(section, "storage_plot", None)  # G3's storage reads
        for plot in [*(p for layout in layouts for p in layout.plots), *section.plots,
                     *([storage] if storage is not None else [])]:
            assert plot.data_uri.startswith(SVG)
            svg = base64.b64decode(plot.data_uri[len(SVG):]).decode()
            out.append({c.lower() for c in COLOUR.findall(svg)})
    return out


@pytest.fixture(scope="module")
def g3(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, int]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('colours') / 'gate.db'}")
    run_id, _ = fill.g3_run(store, fill.PASS_PLANS)
    return store, run_id


def test_every_figure_has_the_same_colours_in_english_and_chinese(
        g3: tuple[Store, int]) -> None:
    store, run_id = g3
    en, zh = _figures(store, run_id, "en"), _figures(store, run_id, "zh")
    assert len(en) == len(zh) >= 3  # the CDF, the bars, the storage reads
    assert en == zh
    # every figure of a G3 run is drawn per arm: each has both arms in their colours
    arms = {c.lower() for c in ARM_COLOURS.values()}
    assert all(arms <= f for f in zh), zh
