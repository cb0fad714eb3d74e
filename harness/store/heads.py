"""The head migration as the migration files say it, read without importing Alembic.

Why: every command that opens a store checks that it is at head, and Alembic's own
reading (ScriptDirectory: Alembic, Mako and every migration module imported) cost ~0.15-
0.25 s of CPU, most of `gate fleet`'s start-up beyond its own imports. A store found at
this head opens with one SELECT; every other state goes through Alembic
(harness.store.db.upgrade).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

MIGRATIONS = Path(__file__).parent / "migrations"

_VERSION_LINE = re.compile(r"^(down_revision|revision)\s*=\s*(?:\"(\w+)\"|'(\w+)'|(None))\s*$",
                           re.MULTILINE)


@functools.cache  # read once per process
def quick_head() -> str | None:
    """The head revision read from the migration files' text, without importing Alembic
    (module docstring): the one revision no file names as its down_revision. None when a
    file does not say both plainly (each once, a string or None) or there is not exactly
    one head: then `known_revisions` (Alembic's own reading) decides. Only ever used to
    say "the store is at head"; every other state goes through Alembic."""
    revs: set[str] = set()
    downs: set[str] = set()
    head: str | None = None
    try:
        for path in sorted((MIGRATIONS / "versions").glob("[0-9]*.py")):
            lines = list(_VERSION_LINE.finditer(path.read_text()))
            found = {m[1]: m[2] or m[3] for m in lines}
            if len(lines) != 2 or len(found) != 2 or not found.get("revision"):
                raise ValueError(path)
            revs.add(str(found["revision"]))
            if found["down_revision"]:
                downs.add(str(found["down_revision"]))
        heads = revs - downs
        head = heads.pop() if len(heads) == 1 and downs <= revs else None
    except (OSError, ValueError):
        head = None
    return head
