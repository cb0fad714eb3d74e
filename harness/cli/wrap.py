"""Console lines that fit the terminal: wrapped on word boundaries, never inside a word,
with the part that says what to do (after the last " -> ") kept on one line.

Why not the terminal's own wrap: it cuts wherever the edge falls ("gate hosts tr|ust"),
and a line printed with rich's soft wrap is left to it. Why not rich's wrap: it folds a
word longer than the room (a path, a digest) at the edge, and it would split the fix-it
hint that the reader copies. Here a word longer than the line stands alone on its line,
whole, and continuation lines are indented under the first line's text.
"""

from __future__ import annotations

import os
from typing import Any

FIX = " -> "  # what a message says to do follows its last arrow (harness.errors hints)


def _width(text: str) -> int:
    from rich.cells import cell_len

    return int(cell_len(text))


def _words(text: str, room: int) -> list[tuple[int, int]]:
    """(start, end) of each unbreakable piece of `text`: its words, except that the fix
    (from the last "->" to the end) is one piece when it fits in `room` cells."""
    keep = text.rfind(FIX)
    keep = keep + 1 if keep >= 0 and _width(text[keep + 1:]) <= room else -1
    pieces: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        if i == keep:
            pieces.append((i, n))
            break
        j = text.find(" ", i)
        j = n if j < 0 else j
        pieces.append((i, j))
        i = j
    return pieces


def breaks(text: str, width: int, indent: int = 0) -> list[tuple[int, int]]:
    """(start, end) of each line of one paragraph `text` wrapped to `width` cells, the
    lines after the first `indent` cells in: greedy, on spaces only."""
    room = max(1, width - indent)
    lines: list[tuple[int, int]] = []
    start = end = -1
    for a, b in _words(text, room):
        avail = width if not lines else room
        if start < 0:
            start, end = (0 if not lines else a), b  # a first line keeps its lead
        elif _width(text[start:b]) <= avail:
            end = b
        else:
            lines.append((start, end))
            start, end = a, b
    if start >= 0:
        lines.append((start, end))
    return lines or [(0, 0)]


def wrap(text: str, width: int, indent: int = 0) -> list[str]:
    """`text` as lines of at most `width` cells (a longer word alone on its line), every
    line after the first indented by `indent` spaces; a newline in `text` starts a line."""
    out: list[str] = []
    for para in text.split("\n"):
        spans = breaks(para, width, indent)
        out += [("" if not out and k == 0 else " " * indent) + para[a:b]
                for k, (a, b) in enumerate(spans)]
    return out


def wrap_markup(markup: str, width: int, indent: int = 0) -> list[Any]:
    """As `wrap`, for rich markup: the lines as rich Text, each keeping its styles."""
    from rich.text import Text

    whole = Text.from_markup(markup)
    out: list[Text] = []
    offset = 0
    for para in whole.plain.split("\n"):
        for a, b in breaks(para, width, indent):
            piece = whole[offset + a:offset + b]
            out.append(piece if not out else Text(" " * indent) + piece)
        offset += len(para) + 1
    return out


def width_of(console: Any) -> int | None:
    """The width to wrap `console`'s lines to: the terminal's (or COLUMNS, when set); None
    for a pipe or a log without COLUMNS, where a logical line stays one line (grep finds
    a reason whole; a log viewer wraps as it likes)."""
    if console.is_terminal or os.environ.get("COLUMNS"):
        return int(console.width)
    return None


def say(console: Any, markup: str, indent: int = 0) -> None:
    """One logical line (rich markup) on `console`, wrapped to its width (width_of)."""
    width = width_of(console)
    if width is None:
        console.print(markup, highlight=False, soft_wrap=True)
        return
    for line in wrap_markup(markup, width, indent):
        console.print(line, highlight=False, soft_wrap=True)


def echo(text: str, err: bool = False, indent: int = 2) -> None:
    """Plain `text` on stdout (stderr with `err`), as click.echo prints it, wrapped to the
    terminal's width (width_of)."""
    import click
    from rich.console import Console

    width = width_of(Console(stderr=err))
    for line in wrap(text, width, indent) if width is not None else [text]:
        click.echo(line, err=err)
