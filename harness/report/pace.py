"""Fewer garbage collections while a report is made.

Making a report allocates a few million objects that live until it is written: the
modules it imports (pandas, matplotlib, WeasyPrint), the report model, WeasyPrint's boxes.
At CPython's default first threshold (a collection every 700 net allocations) the
collector ran so often, walking ever more surviving objects, that it took a quarter of a
one-gate Chinese PDF's CPU: 0.9 s of 3.6-3.9 s measured (docs/report.md, "Fonts and
speed"); at 10 000 it takes almost none, for ~1 MB more memory. Nothing here is freed
later than it would be (reference counting frees what it can at once; cycles wait a
little longer), and the thresholds the caller had are restored on the way out.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FIRST_THRESHOLD = 10_000  # net allocations between two collections of the youngest objects


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within: the youngest generation is collected every FIRST_THRESHOLD allocations (or
    the caller's, if higher); also usable as a decorator (`@fewer_collections()`)."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], FIRST_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
