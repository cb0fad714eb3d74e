"""Static plots for the report: matplotlib figures as inline SVG data URIs (no JavaScript).

Text stays text (svg.fonttype "none"): WeasyPrint draws it with the report's fonts, which
halves the SVG size and the PDF time against glyph outlines and keeps labels searchable;
the CJK font found through fontconfig is registered with matplotlib for its text metrics.
Large inputs are downsampled here (a CDF to a few hundred quantiles, a long series to
bucket means with a min/max envelope) so a G4 soak does not produce a 50 MB page.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from harness.report.fonts import Fonts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ARM_COLOURS = {"baseline": "#5b6b82", "accelerated": "#d9822b"}
# Everything that is not an arm: never the arms' slate or orange, so one colour keeps one
# meaning across the panels of a figure (orange is "accelerated", nothing else).
PALETTE = ("#3a9a5b", "#7a5bb5", "#2f6db5", "#8a8a8a", "#b5442f")
HLINE_STYLES = ("--", ":", "-.")
CDF_POINTS = 400
MAX_LINE_POINTS = 600


@dataclass(frozen=True)
class Bars:
    """One group of bars: a value per category with optional interval whiskers."""

    label: str
    values: Sequence[float]
    lo: Sequence[float] | None = None
    hi: Sequence[float] | None = None
    colour: str | None = None


def _rc(fonts: Fonts) -> dict[Any, Any]:
    return {"svg.fonttype": "none", "svg.hashsalt": "gate-report",
            "font.family": fonts.families(), "font.size": 8.5, "axes.titlesize": 9.5,
            "legend.fontsize": 7, "legend.frameon": False}


@contextmanager
def _canvas(fonts: Fonts, width: float, height: float, ncols: int = 1,
            bottom: float = 0.17) -> Iterator[tuple[Figure, list[Axes], list[str]]]:
    """Styled axes in one row; the SVG data URI is appended to the yielded list."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib import font_manager
    from matplotlib.figure import Figure

    if fonts.cjk is not None:
        known = {f.fname for f in font_manager.fontManager.ttflist}
        if fonts.cjk.file not in known:
            font_manager.fontManager.addfont(fonts.cjk.file)
    out: list[str] = []
    with matplotlib.rc_context(_rc(fonts)):
        fig = Figure(figsize=(width, height), dpi=100)
        # Fixed margins: constrained layout costs ~60 ms a figure and the shapes are known.
        if ncols == 1:
            fig.subplots_adjust(left=0.1, right=0.98, top=0.96, bottom=bottom)
        else:
            # Room left of each panel for its tick labels and y label, and below for the
            # legend: nothing drawn over the bars or another label.
            fig.subplots_adjust(left=0.1, right=0.99, top=0.9, bottom=0.3, wspace=0.6)
        axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
        for ax in axes:
            ax.grid(True, color="#dddddd", linewidth=0.6)
            ax.set_axisbelow(True)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        yield fig, axes, out
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    out.append("data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii"))


def cdf_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, F(x)) at up to CDF_POINTS quantiles; +inf (failed) keeps F below 1."""
    n = values.size
    finite = np.sort(values[np.isfinite(values)])
    if finite.size == 0:
        return np.array([]), np.array([])
    if finite.size <= CDF_POINTS:
        x = finite
        y = np.arange(1, finite.size + 1) / n
    else:
        ranks = np.linspace(0, finite.size - 1, CDF_POINTS).round().astype(int)
        x = finite[ranks]
        y = (ranks + 1) / n
    return x, y


def cdf(fonts: Fonts, curves: Mapping[str, tuple[np.ndarray, str, str]], *, xlabel: str,
        ylabel: str) -> str:
    """curves: label -> (values with +inf for failures, colour, linestyle)."""
    with _canvas(fonts, 6.6, 3.3, bottom=0.3) as (_fig, (ax,), out):
        for label, (values, colour, style) in curves.items():
            x, y = cdf_points(values)
            if x.size:
                ax.step(x, y, where="post", label=label, color=colour, linestyle=style,
                        linewidth=1.3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.02)
        if curves:  # below the axes: inside, it covered the slowest curves' feet
            ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.2),
                      borderaxespad=0)
    return out[0]


@dataclass(frozen=True)
class BarPanel:
    """One axes of grouped bars: categories, groups, y label, threshold lines."""

    title: str
    categories: Sequence[str]
    groups: Sequence[Bars]
    ylabel: str
    hlines: Sequence[tuple[float, str]] = ()
    percent: bool = False


def _bars_on(ax: Axes, panel: BarPanel) -> None:
    scale = 100.0 if panel.percent else 1.0
    x = np.arange(len(panel.categories), dtype=float)
    width = 0.8 / max(1, len(panel.groups))
    for i, g in enumerate(panel.groups):
        vals = np.asarray(g.values, dtype=float) * scale
        pos = x - 0.4 + width * (i + 0.5)
        colour = g.colour or PALETTE[i % len(PALETTE)]
        ax.bar(pos, np.nan_to_num(vals), width * 0.9, label=g.label, color=colour)
        if g.lo is not None and g.hi is not None:
            lo = np.asarray(g.lo, dtype=float) * scale
            hi = np.asarray(g.hi, dtype=float) * scale
            ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(vals)
            if ok.any():
                err = np.vstack([vals[ok] - lo[ok], hi[ok] - vals[ok]]).clip(min=0)
                ax.errorbar(pos[ok], vals[ok], yerr=err, fmt="none", ecolor="#222222",
                            capsize=3, linewidth=1)
    # Threshold lines are named in the legend, one line style each: labels written beside
    # lines a few percent apart overlapped each other and the bars.
    for k, (value, label) in enumerate(panel.hlines):
        ax.axhline(value * scale, color="#b5161b", linestyle=HLINE_STYLES[k % 3],
                   linewidth=1, label=label)
    ax.set_xticks(x, list(panel.categories))
    ax.set_title(panel.title, fontsize=8)
    ax.set_ylabel(panel.ylabel + (" (%)" if panel.percent else ""), labelpad=2)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=6, ncols=1,
              borderaxespad=0, handlelength=1.8)


def bar_panels(fonts: Fonts, panels: Sequence[BarPanel], height: float = 3.3) -> str:
    """Several bar charts side by side in one figure (one SVG instead of one per chart)."""
    with _canvas(fonts, 6.6, height, ncols=len(panels)) as (_fig, axes, out):
        for ax, panel in zip(axes, panels, strict=True):
            _bars_on(ax, panel)
    return out[0]


def downsample(x: np.ndarray, y: np.ndarray,
               points: int = MAX_LINE_POINTS) -> tuple[np.ndarray, ...]:
    """Bucket means with min / max envelope when a series has more than `points` samples."""
    if x.size <= points:
        return x, y, y, y
    edges = np.linspace(0, x.size, points + 1).astype(int)
    starts = edges[:-1]
    counts = np.diff(edges)
    xs = np.add.reduceat(x, starts) / counts
    mean = np.add.reduceat(y, starts) / counts
    return xs, mean, np.minimum.reduceat(y, starts), np.maximum.reduceat(y, starts)


def _alone(y: np.ndarray) -> list[int]:
    """Indices of the points with no drawn neighbour (NaN or the end on both sides)."""
    drawn = np.isfinite(y)
    before = np.concatenate([[False], drawn[:-1]])
    after = np.concatenate([drawn[1:], [False]])
    return [int(i) for i in np.flatnonzero(drawn & ~before & ~after)]


def lines(fonts: Fonts, series: Mapping[str, tuple[np.ndarray, np.ndarray]], *, xlabel: str,
          ylabel: str, width: float = 6.6, height: float = 2.4,
          colours: Mapping[str, str] | None = None) -> str:
    """Time series, label -> (x, y); long ones are downsampled with an envelope.
    `colours`: label -> colour (an arm's series: ARM_COLOURS by the arm, never by its
    label, which is in the report's language); others take the palette in order.
    A point between two gaps (NaN) is marked: a line of one point is not drawn."""
    with _canvas(fonts, width, height) as (_fig, (ax,), out):
        for i, (label, (x, y)) in enumerate(series.items()):
            colour = (colours or {}).get(label, PALETTE[i % len(PALETTE)])
            xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
            xs, mean, lo, hi = downsample(xa, ya)
            if xs.size != xa.size:
                ax.fill_between(xs, lo, hi, color=colour, alpha=0.2, linewidth=0)
            ax.plot(xs, mean, label=label, color=colour, linewidth=1.1,
                    marker="o", markevery=None if xs.size < 30 else _alone(mean),
                    markersize=3)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if series:
            ax.legend(loc="best", ncols=2)
    return out[0]
