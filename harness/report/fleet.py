"""`gate report --fleet`: the fleet (`gate fleet`'s view) as a PDF / HTML a reviewer keeps.

The store is read once through harness.store.fleet (the same rules as `gate fleet` and
`gate status`: which run stands for a gate, its effective verdict); everything shown is
decided here in the report's language, then rendered by the run report's machinery (its
Jinja environment, CSS, fonts, WeasyPrint with data: URIs only). Landscape: a row holds
a campaign and four gates side by side.

G3's thresholds are drawn at harness.config.models.G3Thresholds' defaults: the fleet read
carries no run's config (a G3 config is KBs a run; reading 100 of them to draw three
lines is not worth it), and a run's own thresholds can only be stricter for the drop and
the gain (the config refuses lower ones); a raised band top is a weakened run, flagged.
"""

from __future__ import annotations

import datetime as dt
import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from harness.config.models import G3Thresholds
from harness.registry import AB_GATE, GATE_IDS
from harness.report.api import _targets  # the format / suffix rule of every report
from harness.report.fleet_plot import Point, drop_gain, labelled
from harness.report.fmt import pct
from harness.report.fonts import Fonts, choose_fonts
from harness.report.i18n import VERDICT_TOKENS, Translator, translator
from harness.report.model import SCHEMA_VERSION, Frozen, Plot
from harness.report.pace import fewer_collections
from harness.report.render import column_widths, environment, safe_font_stack, write_pdf
from harness.report.resources import read_text
from harness.store.db import Store
from harness.store.fleet import NOT_RUN, ABCell, CampaignLine, Filters, GateLine, fleet, lowest

BUDGET = 172.0  # characters across a landscape A4 data table (portrait: 118)


class FleetGate(Frozen):
    """One gate's cell: the verdict word (coloured by `token`) and lines under it."""

    gate: str
    token: str  # PASS STOP-LOSS INCONCLUSIVE ERROR NOT_RUN
    word: str
    date: str = ""
    flags: list[str]  # FORCED, SIMULATED, WEAKENED (signed / unsigned), translated
    notes: list[str]  # a later partial run, a run in progress


class FleetRow(Frozen):
    number: int  # the row's number, also beside its point in the figure
    ref: str  # SITE/CAMPAIGN
    customer: str
    vendor: str
    gates: list[FleetGate]
    headline: list[str]  # the A/B gate's lowest drop and gain, each with where


class FleetReport(Frozen):
    schema_version: int = SCHEMA_VERSION
    lang: str
    title: str
    facts: list[tuple[str, str]]  # (label, value): store, generated, filters, listed
    intro: str
    columns: list[tuple[str, str]]  # (heading, a name under it kept on one line in zh)
    widths: list[float]  # percent per column (fixed table layout)
    rows: list[FleetRow]
    empty: str = ""  # no campaign listed: what the page says instead of the table
    plot: Plot | None = None
    plot_note: str = ""  # no G3 figure to plot
    simulated: bool
    stamp: str
    footer: str
    font_stack: str
    logo: str = ""


def token(verdict: str) -> str:
    """The catalogue's token for a fleet verdict ("not run" is NOT_RUN)."""
    return verdict if verdict in VERDICT_TOKENS and verdict != NOT_RUN else "NOT_RUN"


def local_day(epoch: float) -> str:
    """A date as `gate fleet` prints it and `--since` reads it: local time."""
    return dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d")


def _where(t: Translator, cells: Sequence[ABCell], cell: ABCell) -> str:
    several = len({c.layout for c in cells}) > 1
    return t("fleet.where_layout" if several else "fleet.where",
             {"layout": cell.layout, "tier": cell.tier})


def gate_cell(t: Translator, g: GateLine) -> FleetGate:
    flags = [t(k) for k, on in (("mark.forced", g.forced), ("mark.simulated", g.simulated))
             if on]
    if g.weakened:
        flags.append(t("fleet.flag.weakened_signed" if g.signed else
                       "fleet.flag.weakened_unsigned"))
    notes = []
    if g.partial_later is not None:
        p = g.partial_later
        notes.append(t("fleet.partial_later", {"run": p.run, "verdict": t.verdict(
            token(p.verdict))}))
    if g.running is not None:
        r = g.running
        notes.append(t("fleet.running", {"run": r.run}))
        if r.windows is not None:
            notes.append(t("fleet.windows_of", {"n": r.windows, "m": r.planned})
                         if r.planned is not None else t("fleet.windows", {"n": r.windows}))
    return FleetGate(gate=g.gate, token=token(g.verdict), word=t.verdict(token(g.verdict)),
                     date=local_day(g.finished_at) if g.finished_at is not None else "",
                     flags=flags, notes=notes)


def headline_lines(t: Translator, ab: GateLine | None) -> list[str]:
    if ab is None:
        return []
    out = []
    for what in ("drop", "gain"):
        found = lowest(ab.cells, what)
        if found is not None:
            out.append(t(f"fleet.worst_{what}", {"value": pct(found[0]),
                                                  "where": _where(t, ab.cells, found[1])}))
    return out


def _ab(c: CampaignLine) -> GateLine | None:
    """The campaign's A/B gate line, whose cells the headline column shows."""
    return next((g for g in c.gates if g.gate == AB_GATE), None)


def _row(t: Translator, number: int, c: CampaignLine) -> FleetRow:
    return FleetRow(number=number, ref=c.ref, customer=c.customer,
                    vendor=t("fleet.vendor", {"vendor": c.vendor}) if c.vendor else "",
                    gates=[gate_cell(t, g) for g in c.gates],
                    headline=headline_lines(t, _ab(c)))


def filters_text(t: Translator, f: Filters) -> str:
    parts = [t(f"fleet.filter.{k}", {"value": v}) for k, v in (
        ("site", f.site), ("customer", f.customer), ("accelerator", f.accelerator),
        ("since", local_day(f.since) if f.since is not None else None)) if v is not None]
    return t("fleet.filter.sep").join(parts) if parts else t("fleet.filter.none")


def _points(rows: Sequence[FleetRow], lines: Sequence[CampaignLine]) -> list[Point]:
    out = []
    for row, c in zip(rows, lines, strict=True):
        ab = _ab(c)
        if ab is None:
            continue
        d, g = lowest(ab.cells, "drop"), lowest(ab.cells, "gain")
        if d is not None and g is not None:
            out.append(Point(row.number, d[0], g[0], token(ab.verdict), ab.simulated))
    return out


def _plot(t: Translator, fonts: Fonts, points: list[Point], campaigns: int) -> Plot:
    th = G3Thresholds()
    shown = t("fleet.plot.labels_all") if len(labelled(points)) == len(points) else \
        t("fleet.plot.labels_some")
    uri, left_out = drop_gain(fonts, t, points, th)
    if left_out:
        shown += t("fleet.plot.labels_left_out", {"n": left_out})
    caption = t("fleet.plot.caption", {"n": len(points), "m": campaigns, "labels": shown})
    return Plot(title=t("fleet.plot.title"), data_uri=uri, caption=caption)


def _plain(row: FleetRow) -> list[str]:
    """The row as text, for the column widths (what column_widths measures)."""
    who = "\n".join(x for x in (row.ref, " · ".join(y for y in (row.customer, row.vendor)
                                                       if y)) if x)
    gates = ["\n".join([g.word, g.date, *g.flags, *g.notes]) for g in row.gates]
    return [str(row.number), who, *gates, "\n".join(row.headline)]


def _cols(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def widths(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[str]],
           whole: bool) -> list[float]:
    """column_widths', then each column at least as wide as its heading's longest word in
    bold, or with `whole` (Chinese, drawn `nowrap`) its whole name: a CJK line breaks
    between any two characters, so "G4 · 72 小时稳定性" broke before 性 even in a column
    where "72 小时稳定性" fits. The other columns give up the room in proportion."""
    out = column_widths([f"{a} {b}" for a, b in columns], rows, budget=BUDGET)
    need = [max([*(_cols(w) for w in a.split()), *([_cols(b)] if whole else
                                                      [_cols(w) for w in b.split()])])
            for a, b in columns]
    floor = [100 * (1.25 * n + 2) / BUDGET for n in need]
    fixed = [w < f for w, f in zip(out, floor, strict=True)]
    while True:
        spare = 100 - sum(f for f, x in zip(floor, fixed, strict=True) if x)
        free = sum(w for w, x in zip(out, fixed, strict=True) if not x)
        if spare <= 0 or free <= 0:
            return out
        shown = [f if x else w * spare / free
                 for w, f, x in zip(out, floor, fixed, strict=True)]
        under = [not x and w < f for w, f, x in zip(shown, floor, fixed, strict=True)]
        if not any(under):
            return [round(w, 2) for w in shown]
        fixed = [x or u for x, u in zip(fixed, under, strict=True)]


def build_fleet_report(lines: Sequence[CampaignLine], t: Translator, fonts: Fonts, *,
                       store_name: str, filters: Filters, now: float | None = None,
                       logo: str = "") -> FleetReport:
    """The model of the fleet report from `gate fleet`'s read (no database here)."""
    now = time.time() if now is None else now
    rows = [_row(t, i, c) for i, c in enumerate(lines, start=1)]
    columns = [("#", ""), (t("fleet.col.campaign"), ""),
               *((g, t.gate_name(g)) for g in GATE_IDS), (AB_GATE, t("fleet.col.g3"))]
    sites = len({c.site for c in lines})
    simulated = any(g.simulated for c in lines for g in c.gates)
    title = t("fleet.title")
    points = _points(rows, lines)
    offset = dt.datetime.fromtimestamp(now).astimezone().strftime("%z")
    zone = f"UTC{offset[:3]}:{offset[3:]}"
    facts = [(t("fleet.fact.store"), store_name),
             (t("fleet.fact.generated"),
              dt.datetime.fromtimestamp(now).strftime("%Y-%m-%d %H:%M") + f" ({zone})"),
             (t("fleet.fact.filters"), filters_text(t, filters)),
             (t("fleet.fact.listed"), t("fleet.count", {"n": len(lines), "sites": sites}))]
    return FleetReport(
        lang=t.lang, title=(t("title.simulated_prefix") + title) if simulated else title,
        facts=facts, intro=t("fleet.intro", {"zone": zone}), columns=columns,
        widths=widths(columns, [_plain(r) for r in rows], whole=t.lang == "zh"),
        rows=rows, empty="" if rows else t("fleet.none_filtered" if filters != Filters()
                                           else "fleet.none"),
        plot=_plot(t, fonts, points, len(rows)) if points else None,
        plot_note="" if points or not rows else t("fleet.plot.none"),
        simulated=simulated, stamp=t("stamp.simulated") if simulated else "",
        footer=t("fleet.footer", {"n": len(lines)}), font_stack=fonts.css_stack(),
        logo=logo)


def stylesheet(report: FleetReport) -> Markup:
    """report.css and the font stack (font names sanitised: they come from the OS)."""
    stack = safe_font_stack(report.font_stack)
    return Markup(read_text("report.css")
                  + f"\nhtml, body, table, pre {{ font-family: {stack}; }}\n"
                  f"@page {{ @top-center {{ font-family: {stack}; }}"
                  f" @bottom-left {{ font-family: {stack}; }} }}\n")


def render_fleet_html(report: FleetReport, t: Translator) -> str:
    template = environment().get_template("fleet.html.j2")
    return template.render(r=report, t=t, css=stylesheet(report))


def store_name(store: Store) -> str:
    """A SQLite file's path, else the URL (a store's URL never carries a password)."""
    path = store.file()
    return str(path) if path is not None else store.url


@fewer_collections()  # harness/report/pace.py
def render_fleet_report(store: Store, out: Path, lang: str = "en", fmt: str = "pdf", *,
                        filters: Filters | None = None, logo: str | None = None
                        ) -> list[Path]:
    """Read the fleet, render it to `out` (suffix per format, as every report); returns
    the paths written. A site named in `filters` that the store lacks: NotFoundError."""
    targets = _targets(out, fmt)
    if not targets[0].parent.is_dir():
        from harness.errors import UsageError

        raise UsageError(f"directory {targets[0].parent} does not exist", key="-o")
    t = translator(lang)
    fonts = choose_fonts(lang)
    filters = filters or Filters()
    lines = fleet(store, GATE_IDS, filters)
    report = build_fleet_report(lines, t, fonts, store_name=store_name(store),
                                filters=filters, logo=logo or "")
    html = render_fleet_html(report, t)
    for target in targets:
        if target.suffix == ".pdf":
            write_pdf(html, target)
        else:
            target.write_text(html, encoding="utf-8")
    return targets
