"""The fleet report's figure: each campaign's G3 TTFT p50 drop against its throughput gain,
with the decision thresholds drawn, so a reviewer sees the fleet's margins at a glance.

One point per campaign (its standing G3 run's lowest drop and lowest gain over the cells:
the figures of the table's row, numbered as the row), not one per cell coloured by
campaign: a fleet has tens to hundreds of campaigns and no palette tells 100 of them apart,
while one point per campaign keeps point and row the same two numbers. The lowest drop
and the lowest gain may come from two cells, so a point is the campaign's worst corner:
past both thresholds there, every cell is. Colour is the G3 effective verdict; a hollow
point is a simulated run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.config.models import G3Thresholds
from harness.report.fonts import Fonts
from harness.report.i18n import Translator

# The private canvas is shared on purpose: one figure style (fonts, CJK registration, SVG
# text kept as text) for every figure of every report.
from harness.report.plots import _canvas

# report.css's verdict colours (tone-*), so a point and its table word agree
TONES = {"PASS": "#1f7a3a", "STOP-LOSS": "#b5161b", "INCONCLUSIVE": "#c98a00",
         "ERROR": "#7a1f8a"}
OTHER = "#778899"
DRAWN = ("PASS", "INCONCLUSIVE", "ERROR", "STOP-LOSS")
THRESHOLD = "#12314f"
LABEL_ALL = 40  # up to this many points each carries its row number; above, only the
#                 ones that did not pass (a hundred numbers overprint one another)
MAX_NUMBERS = 4


@dataclass(frozen=True)
class Point:
    """One campaign's G3: its table row, lowest drop and gain (shares), verdict token."""

    number: int
    drop: float
    gain: float
    token: str
    simulated: bool


def labelled(points: Sequence[Point]) -> list[Point]:
    """The points that carry their row number."""
    if len(points) <= LABEL_ALL:
        return list(points)
    return [p for p in points if p.token != "PASS"]


def labels(points: Sequence[Point]) -> list[tuple[float, float, str]]:
    """(drop %, gain %, text): the row numbers of the labelled points, those within half a
    percent of one another in one label ("3, 17, 45"): two campaigns on the same spot
    printed their numbers over each other. At most MAX_NUMBERS a label, then "+n"."""
    spots: dict[tuple[int, int], list[Point]] = {}
    for p in labelled(points):
        spots.setdefault((round(p.drop * 200), round(p.gain * 200)), []).append(p)
    out = []
    for here in spots.values():
        numbers = [str(p.number) for p in here]
        more = len(numbers) - MAX_NUMBERS
        text = ", ".join(numbers[:MAX_NUMBERS]) + (f" +{more}" if more > 0 else "")
        out.append((here[0].drop * 100, here[0].gain * 100, text))
    return out


def _limits(values: list[float], low: float, high: float) -> tuple[float, float]:
    """An axis range (percent) holding the thresholds' surroundings (`low`..`high`) and
    every point, with a margin; not from 0: a fleet close to its thresholds would be a
    knot of points whose numbers overprint one another."""
    lo, hi = min([low, *values]), max([high, *values])
    pad = 0.06 * (hi - lo)
    return lo - pad, hi + pad


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels
DPI = 100  # plots._canvas's
FONT = 6.5  # a label's size in points
# Where a label may sit beside its point (points: x of its left edge, y of its baseline),
# in the order tried: right above, right below, left above, left below (left: minus width)
OFFSETS = ((3.0, 2.0), (3.0, -8.0), (-3.0, 2.0), (-3.0, -8.0))


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place(anchors: Sequence[tuple[float, float]], texts: Sequence[str],
          markers: Sequence[tuple[float, float]]) -> list[tuple[int, float, float] | None]:
    """Per label (its point's pixel position, its text): the offset in points it is drawn
    at, the first of OFFSETS where it covers no marker and no label placed before it;
    None: nowhere free, left out (the caption says so) rather than printed over another."""
    px = DPI / 72.0
    taken: list[Box] = [(x - 3, y - 3, x + 3, y + 3) for x, y in markers]
    out: list[tuple[int, float, float] | None] = []
    for i, ((x, y), text) in enumerate(zip(anchors, texts, strict=True)):
        w, h = len(text) * FONT * 0.6 * px, FONT * 1.1 * px
        chosen = None
        for dx, dy in OFFSETS:
            left = x + dx * px - (w if dx < 0 else 0)
            box = (left, y + dy * px, left + w, y + dy * px + h)
            if not any(_overlaps(box, b) for b in taken):
                chosen = (i, dx - (w / px if dx < 0 else 0), dy)
                taken.append(box)
                break
        out.append(chosen)
    return out


def drop_gain(fonts: Fonts, t: Translator, points: Sequence[Point],
              th: G3Thresholds) -> tuple[str, int]:
    """The scatter as an SVG data URI, labels in the report's language; and how many
    row-number labels were left out for want of room."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    drop, gain, top = th.ttft_p50_drop * 100, th.throughput_gain * 100, th.band_top * 100
    with _canvas(fonts, 10.0, 4.0, bottom=0.27) as (_fig, (ax,), out):
        x0, x1 = _limits([p.drop * 100 for p in points], drop - 10, drop + 10)
        y0, y1 = _limits([p.gain * 100 for p in points], gain - 10, top + 5)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.add_patch(Rectangle((drop, gain), x1 - drop, top - gain, color=TONES["PASS"],
                               alpha=0.07, linewidth=0, label=t("fleet.plot.zone")))
        ax.axvline(drop, color=THRESHOLD, linestyle="--", linewidth=1,
                   label=t("fleet.plot.min_drop", {"value": f"{drop:.0f} %"}))
        ax.axhline(gain, color=THRESHOLD, linestyle=":", linewidth=1.2,
                   label=t("fleet.plot.min_gain", {"value": f"{gain:.0f} %"}))
        ax.axhline(top, color=THRESHOLD, linestyle="-.", linewidth=1,
                   label=t("fleet.plot.band_top", {"value": f"{top:.0f} %"}))
        # the worse drawn last, on top: a STOP-LOSS on the spot of a PASS stays seen
        tokens = sorted({p.token for p in points}, key=lambda k: (DRAWN.index(k) if k in DRAWN
                                                                   else -1, k))
        for token in tokens:
            mine = [p for p in points if p.token == token]
            colour = TONES.get(token, OTHER)
            for hollow in (False, True):
                some = [p for p in mine if p.simulated == hollow]
                if some:
                    ax.scatter([p.drop * 100 for p in some], [p.gain * 100 for p in some],
                               s=26, linewidths=1.2, edgecolors=colour, zorder=3,
                               facecolors="none" if hollow else colour)
        spots = labels(points)
        anchors = [(float(a), float(b)) for a, b in
                   ax.transData.transform([(x, y) for x, y, _ in spots] or [(0.0, 0.0)])]
        markers = ax.transData.transform([(p.drop * 100, p.gain * 100) for p in points])
        where = place(anchors[:len(spots)], [s for _, _, s in spots],
                      [(float(a), float(b)) for a, b in markers])
        for found in where:
            if found is not None:
                i, dx, dy = found
                ax.annotate(spots[i][2], spots[i][:2], xytext=(dx, dy),
                            textcoords="offset points", fontsize=FONT, color="#333333")
        handles, _ = ax.get_legend_handles_labels()
        handles += [Line2D([], [], linestyle="none", marker="o", markersize=5,
                           color=TONES.get(k, OTHER), label=t.verdict(k)) for k in tokens]
        if any(p.simulated for p in points):
            handles.append(Line2D([], [], linestyle="none", marker="o", markersize=5,
                                  markerfacecolor="none", color=OTHER,
                                  label=t("fleet.plot.simulated")))
        ax.set_xlabel(t("fleet.plot.x"))
        ax.set_ylabel(t("fleet.plot.y"))
        ax.legend(handles=handles, ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.17),
                  borderaxespad=0)
    return out[0], sum(found is None for found in where)
