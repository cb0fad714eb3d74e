"""The tables `gate status`, `gate runs list` and `gate runs show` print: a verdict is
never cut, whatever the terminal's width.

Why: rich cuts a word wider than its column ("INCONCLUSI…"), and at 80 columns the
status table did exactly that to the one word the reader came for. Here a column marked
`whole` is at least as wide as its longest word, every other column folds; when even
those minimums do not fit the terminal (60 columns, a phone's SSH client), each row is
printed as a block of `header: value` lines instead of a table, as kubectl's `describe`
does. `--wide` prints one line per row at any width, for a pager or a file.
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


@dataclass(frozen=True)
class Column:
    header: str
    whole: bool = False  # its words are never cut (verdicts, run ids, dates)
    weight: int = 1  # its share of the room past the minimums (a message: more)


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
           room: int) -> list[int] | None:
    """Each column's width in a table `room` cells wide: every column as wide as its
    longest line when that fits; else at least its minimum (a `whole` column: its longest
    word; any other: up to FOLD cells) and the rest shared out level by level.
    None: even the minimums do not fit."""
    natural = [max([_lines(c.header)] + [_lines(_text(r[i])) for r in rows])
               for i, c in enumerate(columns)]
    least = [max([_words(c.header)] + [_words(_text(r[i])) for r in rows]) if c.whole
             else min(natural[i], FOLD) for i, c in enumerate(columns)]
    space = room - (_PAD * len(columns) + 1)
    if sum(natural) <= space:
        return natural
    if sum(least) > space:
        return None
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
    """`rows` on `out` (a rich Console) as a table, or as blocks where it is too narrow."""
    from rich.table import Table
    from rich.text import Text

    sizes = widths(columns, rows, out.width)
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


def _blocks(out: Any, columns: Sequence[Column], rows: Sequence[Sequence[Cell | str]],
            title: str | None) -> None:
    """Each row as a block: its first cell, then `header: value` lines indented under it
    (a wrapped value stays indented)."""
    from rich.padding import Padding
    from rich.text import Text

    if title:
        out.print(Text(title, style="italic"))
    for n, r in enumerate(rows):
        if n:
            out.print()
        for i, (col, c) in enumerate(zip(columns, r, strict=True)):
            if not _text(c):
                continue
            line = Text(f"{col.header}: " if col.header else "", style="dim")
            line.append(_text(c), style=c.style if isinstance(c, Cell) else "")
            out.print(Padding(line, (0, 0, 0, 2 if i else 0), expand=False))
