"""G4 soak windows in the store: one row per (run, window index), written as an upsert.

Why an upsert: a 72 h soak's windows are pulled as they close, and pulled again when the
gate re-reads a window (a late counter) or resumes after it died; each pull of a window
must replace what an earlier one stored, never add a second row (G4 counts windows, and
a window counted twice skews its trend). The store's unique (run_id, idx) holds that on
SQLite and PostgreSQL alike, through each one's INSERT ... ON CONFLICT DO UPDATE; a
window keeps its first `uid` (its name across stores) across every later pull.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table, func, select
from sqlalchemy.dialects import postgresql, sqlite

from harness.errors import StoreError
from harness.store.db import Store
from harness.store.schema import SoakWindowRow

_TABLE = SoakWindowRow.__table__
assert isinstance(_TABLE, Table)
TABLE: Table = _TABLE

KEY = ("run_id", "idx")
# Never changed by a later pull: the row's ids and its key.
KEPT = frozenset({"id", "uid", *KEY})
# What a row may give: every column but the store's own id and the run (an argument).
COLUMNS = frozenset(c.name for c in TABLE.columns) - {"id", "run_id"}
# What a new window cannot be stored without (NOT NULL, no default).
REQUIRED = ("idx", "start_s", "length_s", "requests")
JSON_COLUMNS = ("errors", "counters")


def _insert(store: Store) -> sqlite.Insert | postgresql.Insert:
    name = store.engine.dialect.name
    if name == "sqlite":
        return sqlite.insert(TABLE)
    if name == "postgresql":
        return postgresql.insert(TABLE)
    raise StoreError(f"soak windows are stored on SQLite or PostgreSQL, not {name}")


def _checked(i: int, row: Mapping[str, Any], now: float) -> dict[str, Any]:
    for key in row:
        if key not in COLUMNS:
            raise ValueError(f"soak window row {i}: unknown key {key!r} (columns: "
                             f"{', '.join(sorted(COLUMNS))})")
    for key in REQUIRED:
        if row.get(key) is None:
            raise ValueError(f"soak window row {i}: {key!r} is required")
    out = dict(row)
    for key in JSON_COLUMNS:
        if isinstance(out.get(key), Mapping):
            out[key] = dict(out[key])
    if out.get("pulled_at") is None:
        out["pulled_at"] = now
    return out


def upsert_windows(store: Store, run_id: int, rows: Sequence[Mapping[str, Any]]) -> int:
    """Store `rows` (column -> value; `idx`, `start_s`, `length_s` and `requests`
    required) as windows of `run_id`: a new window is inserted, a stored one (same run and
    idx) gets every column the row gives, except its id, uid, run and idx; columns not
    given keep what was stored. `pulled_at` is now unless given. One transaction for the
    batch. Returns how many rows were given.

    ValueError, before anything is written, for a key that is not a column (naming it)
    or a required one missing."""
    now = time.time()
    merged: dict[int, dict[str, Any]] = {}
    for i, row in enumerate(rows):
        checked = _checked(i, row, now)
        idx = int(checked["idx"])
        # The same window twice in one batch: as if stored one after the other (one
        # statement may not touch a row twice on PostgreSQL).
        merged[idx] = {**merged.get(idx, {}), **checked, "run_id": run_id}
    if not merged:
        return len(rows)
    by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for values in merged.values():
        by_keys.setdefault(tuple(sorted(values)), []).append(values)
    with store.engine.begin() as conn:
        for keys, batch in by_keys.items():
            ins = _insert(store)
            stmt = ins.on_conflict_do_update(
                index_elements=list(KEY),
                set_={k: ins.excluded[k] for k in keys if k not in KEPT})
            conn.execute(stmt, batch)
    return len(rows)


def windows(store: Store, run_id: int) -> list[dict[str, Any]]:
    """Every stored window of the run, as plain dicts of every column, by idx."""
    with store.engine.connect() as conn:
        res = conn.execute(select(TABLE).where(TABLE.c.run_id == run_id)
                           .order_by(TABLE.c.idx))
        return [dict(r._mapping) for r in res]


def last_index(store: Store, run_id: int) -> int | None:
    """The highest window index stored for the run; None when it has none (where a
    resumed soak's pull starts again)."""
    with store.engine.connect() as conn:
        found = conn.scalar(select(func.max(TABLE.c.idx)).where(TABLE.c.run_id == run_id))
    return None if found is None else int(found)
