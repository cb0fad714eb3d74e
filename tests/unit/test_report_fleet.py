"""The fleet report's model and page without a store (harness/report/fleet.py,
fleet_plot.py): `gate fleet`'s read as CampaignLines in, every word in the report's
language out (no English left in Chinese but names, units, tool names and the verdict
tokens auditors look for), the SIMULATED stamp, G3's lowest figures, the column widths,
and the figure's row numbers that never print over one another."""

from __future__ import annotations

import base64
import html as htmllib
import re

import pytest

from harness.report.fleet import (
    FleetReport,
    build_fleet_report,
    filters_text,
    render_fleet_html,
    token,
    widths,
)
from harness.report.fleet_plot import MAX_NUMBERS, Point, labelled, labels, place
from harness.report.fonts import choose_fonts
from harness.report.i18n import load_catalog, translator
from harness.store.fleet import (
    NOT_RUN,
    ABCell,
    CampaignLine,
    Filters,
    GateLine,
    Later,
    Running,
    lowest,
)

T0 = 1_800_000_000.0


def cell(layout: str, tier: int, drop: float, gain: float) -> ABCell:
    return ABCell(layout, tier, "PASS", drop, drop - 0.04, drop + 0.04, gain, gain - 0.03,
                  gain + 0.03)


def line(site: str, campaign: str, *gates: GateLine, customer: str = "ACME",
         vendor: str = "FastKV") -> CampaignLine:
    given = {g.gate: g for g in gates}
    return CampaignLine(site, f"{site}-uid", customer, campaign, f"{campaign}-uid", vendor,
                        tuple(given.get(g, GateLine(g, NOT_RUN)) for g in
                              ("G1", "G2", "G3", "G4")))


LINES = [
    line("acme-sh", "poc-1",
         GateLine("G1", "PASS", run=1, finished_at=T0, forced=True),
         GateLine("G2", "PASS", run=2, finished_at=T0,
                  partial_later=Later(5, "ERROR", T0 + 60)),
         GateLine("G3", "PASS", run=3, finished_at=T0, cells=(
             cell("TP8", 4, 0.38, 0.33), cell("TP4x2", 8, 0.31, 0.36))),
         GateLine("G4", NOT_RUN, running=Running(9, "u9", T0, T0, windows=12, planned=120))),
    line("globex-bj", "weak-1",
         GateLine("G3", "INCONCLUSIVE", run=7, finished_at=T0, weakened=True, simulated=True,
                  cells=(cell("TP8", 4, 0.27, 0.45),)), customer="Globex", vendor=""),
    line("initech", "signed-1",
         GateLine("G3", "PASS", run=8, finished_at=T0, weakened=True, signed=True,
                  cells=(cell("TP8", 16, 0.10, 0.55),))),
]
NAMES = {"acme-sh", "poc-1", "globex-bj", "weak-1", "initech", "signed-1", "ACME", "Globex",
         "FastKV", "TP8", "TP4x2"}
# English a Chinese page keeps: the verdict and flag tokens beside their Chinese (for
# auditors, as the run report), units, tool and metric names, the store's file name
ALLOWED = {"PASS", "STOP-LOSS", "INCONCLUSIVE", "ERROR", "not", "run", "FORCED",
           "SIMULATED", "WEAKENED", "PARTIAL", "RUNNING", "TTFT", "p50", "gate", "status",
           "UTC", "fleet", "db", "tmp"}


def report(lang: str, lines: list[CampaignLine] | None = None,
           filters: Filters | None = None) -> FleetReport:
    return build_fleet_report(LINES if lines is None else lines, translator(lang),
                              choose_fonts(lang), store_name="/tmp/fleet.db",
                              filters=filters or Filters(), now=T0 + 3600)


def test_english_rows_say_verdicts_flags_and_g3_figures() -> None:
    r = report("en")
    assert [row.ref for row in r.rows] == ["acme-sh/poc-1", "globex-bj/weak-1",
                                           "initech/signed-1"]
    poc, weak, signed = r.rows
    g1, g2, _, g4 = poc.gates
    assert (g1.word, g1.flags) == ("PASS", ["FORCED"])
    assert g2.notes == ["PARTIAL #5 ERROR: does not count"]
    assert (g4.token, g4.word, g4.notes) == ("NOT_RUN", "not run",
                                              ["RUNNING #9", "12/120 windows"])
    assert poc.headline == ["drop 31.0 % TP4x2 c=8", "gain 33.0 % TP8 c=4"]
    assert poc.vendor == "vendor FastKV" and weak.vendor == ""
    assert weak.gates[2].flags == ["SIMULATED", "WEAKENED (unsigned)"]
    assert signed.gates[2].flags == ["WEAKENED (signed)"]
    assert signed.headline[0] == "drop 10.0 % c=16"
    assert r.simulated and r.stamp.startswith("SIMULATED") and r.title.startswith("SIMULATED: ")
    assert dict(r.facts)["Listed"] == "3 campaign(s) in 3 site(s)"
    assert dict(r.facts)["Filters"] == "none (every campaign)"
    assert r.plot is not None and r.plot.data_uri.startswith("data:image/svg+xml;base64,")
    assert "(3 of 3)" in r.plot.caption


def test_chinese_rows_and_page_have_no_english_but_names() -> None:
    r = report("zh")
    poc = r.rows[0]
    assert poc.gates[0].word == "通过 (PASS)" and poc.gates[0].flags == ["强制运行 (FORCED)"]
    assert poc.gates[3].notes == ["进行中 (RUNNING) #9", "12/120 个时间窗"]
    assert poc.headline == ["降幅 31.0 % TP4x2 并发 8", "增幅 33.0 % TP8 并发 4"]
    assert r.stamp == translator("zh")("stamp.simulated")
    page = render_fleet_html(r, translator("zh"))
    svg = base64.b64decode(page.split("data:image/svg+xml;base64,")[1].split('"')[0]).decode()
    shown = [re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", " ", page, flags=re.S)),
             " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))]
    text = htmllib.unescape(" ".join(shown))
    for name in sorted(NAMES, key=len, reverse=True):
        text = text.replace(name, " ")
    assert set(re.findall(r"[A-Za-z][A-Za-z-]+", text)) - ALLOWED == set()
    assert "72 小时稳定性" in page and "吞吐量增幅下限 29 %" in htmllib.unescape(svg)


def test_not_simulated_no_stamp_and_a_hostile_name_stays_text() -> None:
    lines = [line("<script>x</script>", "a&b", GateLine("G1", "STOP-LOSS", run=1,
                                                         finished_at=T0))]
    r = report("en", lines)
    assert not r.simulated and r.stamp == "" and r.plot is None and r.plot_note
    page = render_fleet_html(r, translator("en"))
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;/a&amp;b" in page
    assert 'class="stamp"' not in page and "size: A4 landscape" in page


def test_no_campaign_says_so_in_each_language() -> None:
    assert report("en", []).empty == "No campaign in the store."
    narrowed = report("zh", [], Filters(customer="x"))
    assert narrowed.empty == "没有符合筛选条件的测试项目。" and narrowed.rows == []
    assert narrowed.plot is None and narrowed.plot_note == ""


def test_filters_are_named() -> None:
    f = Filters(site="acme", customer="glob", accelerator="fast",
                since=T0 - (T0 % 86400))
    en = filters_text(translator("en"), f)
    assert en.startswith("site acme; customer contains “glob”; accelerator vendor contains")
    assert "finished on or after 20" in en
    assert filters_text(translator("zh"), Filters(site="acme")) == "站点 acme"


def test_worst_and_token() -> None:
    cells = (cell("TP8", 4, 0.30, 0.40), cell("TP4x2", 4, 0.30, 0.29))
    found = lowest(cells, "drop")
    assert found is not None and (found[0], found[1].layout) == (0.30, "TP4x2")  # tie: name
    assert lowest((), "gain") is None
    assert [token(v) for v in ("PASS", NOT_RUN, "odd")] == ["PASS", "NOT_RUN", "NOT_RUN"]


def test_a_chinese_heading_is_never_narrower_than_its_name() -> None:
    columns = [("#", ""), ("站点/测试项目", ""), ("G4", "72 小时稳定性")]
    rows = [["1", "a-very-long-site-name/and-campaign\nACME · 加速器厂商 FastKV", "通过 (PASS)"]]
    shown = widths(columns, rows, whole=True)
    assert abs(sum(shown) - 100) < 0.1
    assert shown[2] >= 100 * (1.25 * 13 + 2) / 172 - 0.01  # "72 小时稳定性": 13 columns


def test_catalogues_both_say_every_fleet_word() -> None:
    en, zh = load_catalog("en"), load_catalog("zh")
    fleet_en = {k for k in en if k.startswith("fleet.")}
    assert fleet_en == {k for k in zh if k.startswith("fleet.")} and len(fleet_en) > 30


def test_row_numbers_on_one_spot_share_a_label() -> None:
    many = [Point(i, 0.30, 0.31, "STOP-LOSS", False) for i in range(1, 8)]
    ((x, y, text),) = labels(many)
    assert (round(x), round(y)) == (30, 31)
    assert text == ", ".join(str(i) for i in range(1, MAX_NUMBERS + 1)) + " +3"
    crowd = [Point(i, 0.3, 0.3, "PASS" if i % 2 else "ERROR", False) for i in range(50)]
    assert all(p.token != "PASS" for p in labelled(crowd))


@pytest.mark.parametrize("n", [2, 12])
def test_labels_never_cover_one_another(n: int) -> None:
    anchors = [(100.0 + 5 * i, 100.0) for i in range(n)]  # points 5 px apart
    where = place(anchors, ["12, 34"] * n, anchors)
    assert where[0] is not None
    if n == 12:
        assert None in where  # no room for all: some left out, none overprinted
