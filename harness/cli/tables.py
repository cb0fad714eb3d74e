"""The tables `gate status`, `gate runs list|show` and `gate demo` print: no word is ever
cut, whatever the terminal's width.

Why: rich cuts a word wider than its column ("INCONCLUSI…"), and at 80 columns the
status table did exactly that to the one word the reader came for. Here every column is
at least as wide as its longest word (a column marked `whole` is not folded at all
when there is room; the others fold between words). When the table does not fit so, a column
marked `below` (a reason, a message: the long free text) leaves the table and is printed
under its row, wrapped on words across the whole width, the other columns in plain
aligned lines above it; when even those do not fit (60 columns, a phone's SSH client),
each row is printed as a block of `header: value` lines, as kubectl's `describe` does.
`--wide` prints one line per row at any width, for a pager or a file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

COLOURS = {"PASS": "green", "STOP-LOSS": "red", "INCONCLUSIVE": "yellow", "ERROR": "magenta",
           "RUNNING": "cyan", "RECORDED": "blue"}
WIDE = 400  # --wide: as wide as the longest line needs
FOLD = 10  # a free-text column is folded to no fewer cells than this
_PAD = 3  # a column's padding (1 + 1) and its border on one side, in rich's default box
_GAP = 2  # between two columns of the plain lines over a `below` text
BELOW_INDENT = 4  # a `below` text's lines start this far in
BELOW_MIN = 32  # a `below` column narrower than this in the table goes under its row


@dataclass(frozen=True)
class Column:
    header: str
    whole: bool = False  # short (a verdict, a run id, a date): one line when there is room
    weight: int = 1  # its share of the room past the minimums (a message: more)
    below: bool = False  # free text that goes under its row when the table is too narrow
    # a name (site/campaign, a path) whose long words may fold at the edge when nothing
    # else fits: it is read as a label, not as a verdict or a fix to copy
    fold: bool = False


@dataclass(frozen=True)
class Cell:
    """A cell's plain text and, for a verdict, the colour it is shown in."""

    text: str
    style: str = ""


def verdict_cell(word: str, shown: str | None = None) -> Cell:
    return Cell(word if shown is None else shown, COLOURS.get(word, ""))


def wide_option(f: F) -> F:
    return click.option("--wide", is_flag=True,
                        help="One line per row, nothing wrapped (for a pager or a file); "
                             "default: wrapped to the terminal.")(f)


def console(wide: bool) -> Any:
    """stdout, at the terminal's width or, with --wide, as wide as a line needs."""
    from rich.console import Console

    return Console(width=WIDE) if wide else Console()


def _words(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(w) for w in text.split()), default=0)


def _lines(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def _text(cell: Cell | str) -> str:
    return cell.text if isinstance(cell, Cell) else cell


def widths(columns: Sequence[Column], rows: Sequence[Sequence[Cell | str]],
           room: int, pad: int = _PAD, edge: int = 1) -> list[int] | None:
    """Each column's width in a table `room` cells wide (`pad` cells a column, `edge` more
    for the table): every column as wide as its longest line when that fits; else at
    least its longest word and the rest shared out level by level. None: even the
    longest words do not fit."""
    natural = [max([_lines(c.header)] + [_lines(_text(r[i])) for r in rows])
               for i, c in enumerate(columns)]
    least = [min(natural[i], FOLD) if c.fold else
             max([_words(c.header)] + [_words(_text(r[i])) for r in rows]
                 + ([] if c.whole else [min(natural[i], FOLD)]))
             for i, c in enumerate(columns)]
    space = room - (pad * len(columns) + edge)
    if sum(natural) <= space:
        return natural
    if sum(least) > space:
        return None
    unfolded = [n if c.whole else m for n, m, c in zip(natural, least, columns, strict=True)]
    if sum(unfolded) <= space:  # the short columns on one line each, when there is room
        least = unfolded
    # water-filling: every column up to one level (times its weight), so the narrow ones
    # are shown whole and the wide free text shares what is left
    def at(level: int) -> list[int]:
        return [min(n, max(m, level * c.weight))
                for n, m, c in zip(natural, least, columns, strict=True)]

    level = max(natural)
    while sum(at(level)) > space:
        level -= 1
    out = at(level)
    for i in [k for k in range(len(out)) if out[k] < natural[k]][:space - sum(out)]:
        out[i] += 1
    return out


def render(out: Any, columns: Sequence[Column], rows: Sequence[Sequence[Cell | str]],
           title: str | None = None) -> None:
    """`rows` on `out` (a rich Console) as a table; where it is too narrow, the `below`
    columns under each row, else each row as a block."""
    from rich.table import Table
    from rich.text import Text

    sizes = widths(columns, rows, out.width)
    cramped = sizes is not None and any(
        c.below and size < min(BELOW_MIN, _natural(c, i, rows))
        for i, (c, size) in enumerate(zip(columns, sizes, strict=True)))
    if sizes is None or cramped:
        keep = [i for i, c in enumerate(columns) if not c.below]
        above = [columns[i] for i in keep]
        short = [[r[i] for i in keep] for r in rows]
        plain = widths(above, short, out.width, pad=_GAP, edge=0) \
            if len(keep) < len(columns) else None
        if plain is not None:
            _stacked(out, columns, rows, plain, title)
            return
        if sizes is None:
            _blocks(out, columns, rows, title)
            return
    table = Table(title=title)
    for col, size in zip(columns, sizes, strict=True):
        table.add_column(col.header, overflow="fold", width=max(1, size))
    for r in rows:
        table.add_row(*[Text(c.text, style=c.style) if isinstance(c, Cell) else Text(c)
                        for c in r])
    out.print(table)


def _stacked(out: Any, columns: Sequence[Column], rows: Sequence[Sequence[Cell | str]],
             sizes: Sequence[int], title: str | None) -> None:
    """The columns that are not `below` as plain aligned lines (`sizes` wide, folded
    between words), each row's `below` texts under it, wrapped on words across the
    whole width (named when there are several)."""
    from rich.text import Text

    from harness.cli.wrap import wrap

    above = [i for i, c in enumerate(columns) if not c.below]
    under = [i for i, c in enumerate(columns) if c.below]

    def lines(cells: Sequence[Cell | str], style: str = "") -> list[Text]:
        folded = [wrap(_text(c), size) for c, size in zip(cells, sizes, strict=True)]
        out_lines = []
        for k in range(max(len(f) for f in folded)):
            line = Text()
            for n, (c, f, size) in enumerate(zip(cells, folded, sizes, strict=True)):
                piece = f[k] if k < len(f) else ""
                line.append(piece, style=style or (c.style if isinstance(c, Cell) else ""))
                if n < len(cells) - 1:
                    line.append(" " * (size - _cell_len(piece) + _GAP))
            out_lines.append(line)
        return out_lines

    if title:
        out.print(Text(title, style="italic"))
    for line in lines([columns[i].header for i in above], style="bold"):
        out.print(line, soft_wrap=True)
    room = out.width - BELOW_INDENT
    for r in rows:
        for line in lines([r[i] for i in above]):
            out.print(line, soft_wrap=True)
        for i in under:
            text = _text(r[i])
            if not text:
                continue
            named = f"{columns[i].header}: " if len(under) > 1 else ""
            for piece in wrap(named + text, room):
                out.print(Text(" " * BELOW_INDENT + piece), soft_wrap=True)


def _natural(column: Column, i: int, rows: Sequence[Sequence[Cell | str]]) -> int:
    return max([_lines(column.header)] + [_lines(_text(r[i])) for r in rows])


def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return int(cell_len(text))


def _blocks(out: Any, columns: Sequence[Column], rows: Sequence[Sequence[Cell | str]],
            title: str | None) -> None:
    """Each row as a block: its first cell, then `header: value` lines indented under it
    (a wrapped value stays indented, wrapped between words)."""
    from rich.markup import escape
    from rich.text import Text

    from harness.cli.wrap import say

    if title:
        out.print(Text(title, style="italic"))
    for n, r in enumerate(rows):
        if n:
            out.print()
        for i, (col, c) in enumerate(zip(columns, r, strict=True)):
            if not _text(c):
                continue
            lead = "  " if i else ""
            name = f"[dim]{escape(col.header)}:[/] " if col.header else ""
            style = c.style if isinstance(c, Cell) else ""
            value = f"[{style}]{escape(_text(c))}[/]" if style else escape(_text(c))
            say(out, lead + name + value, len(lead) + 2)
