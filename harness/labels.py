"""Checks named for people: `G3 · TP8 · c=16`, not `test_cell` (issue 16).

A check's stored name is its test function and its parameters live only in the node id
(`test_g3.py::test_cell[TP8-c16]`); every cell of a gate read `test_cell` on the console,
in `runs show` and in the PDF, and the preflight checks of two layouts looked the same.
One pure function turns (gate, node id, name) into the label all of them show.
"""

from __future__ import annotations

import re
from collections.abc import Callable

SEP = " · "
_CELL = re.compile(r"^(?P<layout>.+)-c(?P<tier>\d+)$")


def _params(nodeid: str) -> list[str]:
    """The node id's parameters, `[TP8-c16]` -> ["TP8", "c=16"], `[gpu1]` -> ["gpu1"]."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return []
    inner = nodeid[nodeid.rindex("[") + 1:-1]
    cell = _CELL.match(inner)
    if cell:
        return [cell["layout"], f"c={cell['tier']}"]
    return [inner]


def _words(name: str) -> str:
    base = name.split("[", 1)[0].removeprefix("test_")
    return "" if base == "cell" else base.replace("_", " ")


def check_label(gate: str | None, nodeid: str, name: str,
                param: Callable[[str], str] | None = None) -> str:
    """`G3 · TP8 · c=16` for a G3 cell, `G3 · TP8 · arms serve the same model` for a
    preflight check of layout TP8, `G1 · gpu1 · nvme present` for a per-host check.
    `param`: a parameter's words in the report's language (a G4 criterion's id)."""
    params = [param(p) for p in _params(nodeid)] if param else _params(nodeid)
    parts = [p for p in (gate or "", *params, _words(name)) if p]
    return SEP.join(parts)
