"""A request row's natural key: (benchmark_id, idx) unique in `request`

Revision ID: 0009
Revises: 0008

Why: a request is (its benchmark, idx) wherever it travels (issue 28); with the key
unique, a row stored twice (a resumed pull, a re-sent batch) is one row, and every writer
can say "this one, once" to the database (ON CONFLICT DO NOTHING).

A store that already holds several rows of one (benchmark_id, idx) is brought forward
without losing a distinct row:
- exact duplicates (every column but `id` equal, NULL equal to NULL, NaN to NaN): the
  row with the lowest id stays, the others are deleted (they say nothing the kept one
  does not);
- rows that differ: the lowest id keeps its idx, each other one (in id order) is given
  the next idx past the benchmark's highest, and the benchmark's summary records the
  move under `renumbered_requests` as [old idx, new idx] pairs, so nothing measured is
  dropped and the change is on record.
The index replaces 0002's ix_request_benchmark_id (benchmark_id leads it, so every
lookup by benchmark still has an index, and a write maintains one index, not two).
Downgrade drops the key and puts 0002's index back; deleted exact duplicates are not
made again, and renumbered rows keep their new idx.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"

KEY = "uq_request_benchmark_idx"
OLD_INDEX = "ix_request_benchmark_id"
NOTE = "renumbered_requests"


def _same(value: Any) -> Any:
    """A value as compared for exact duplicates: NaN equal to NaN, bytes as bytes."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _settle(bind: sa.Connection, benchmark_id: int, idxs: Sequence[int]) -> None:
    """One benchmark's rows of the duplicated `idxs`: exact copies deleted, rows that
    differ renumbered past the benchmark's highest idx (module docstring)."""
    rows = bind.execute(
        sa.text("SELECT * FROM request WHERE benchmark_id = :b AND idx IN :idxs "
                "ORDER BY idx, id").bindparams(sa.bindparam("idxs", expanding=True)),
        {"b": benchmark_id, "idxs": list(idxs)}).mappings().all()
    top = int(bind.execute(sa.text("SELECT MAX(idx) FROM request WHERE benchmark_id = :b"),
                           {"b": benchmark_id}).scalar_one())
    kept: dict[int, list[tuple[Any, ...]]] = {}
    drop: list[int] = []
    moved: list[tuple[int, int, int]] = []  # (row id, old idx, new idx)
    for row in rows:
        content = tuple(_same(v) for k, v in row.items() if k != "id")
        seen = kept.setdefault(int(row["idx"]), [])
        if content in seen:
            drop.append(int(row["id"]))
        elif not seen:
            seen.append(content)
        else:
            seen.append(content)
            top += 1
            moved.append((int(row["id"]), int(row["idx"]), top))
    if drop:
        bind.execute(sa.text("DELETE FROM request WHERE id IN :ids").bindparams(
            sa.bindparam("ids", expanding=True)), {"ids": drop})
    for row_id, _old, new in moved:
        bind.execute(sa.text("UPDATE request SET idx = :new WHERE id = :id"),
                     {"new": new, "id": row_id})
    if moved:
        raw = bind.execute(sa.text("SELECT summary FROM benchmark WHERE id = :b"),
                           {"b": benchmark_id}).scalar_one_or_none()
        summary = (json.loads(raw) if isinstance(raw, str) else dict(raw or {}))
        summary[NOTE] = [*summary.get(NOTE, []), *[[old, new] for _, old, new in moved]]
        table = sa.table("benchmark", sa.column("id", sa.Integer), sa.column("summary", sa.JSON))
        bind.execute(sa.update(table).where(table.c.id == benchmark_id)
                     .values(summary=summary))


def upgrade() -> None:
    bind = op.get_bind()
    doubled: dict[int, list[int]] = {}
    for benchmark_id, idx in bind.execute(sa.text(
            "SELECT benchmark_id, idx FROM request GROUP BY benchmark_id, idx "
            "HAVING COUNT(*) > 1 ORDER BY benchmark_id, idx")):
        doubled.setdefault(int(benchmark_id), []).append(int(idx))
    for benchmark_id, idxs in doubled.items():
        for start in range(0, len(idxs), 500):  # IN lists of a bounded size
            _settle(bind, benchmark_id, idxs[start:start + 500])
    op.drop_index(OLD_INDEX, "request")
    op.create_index(KEY, "request", ["benchmark_id", "idx"], unique=True)


def downgrade() -> None:
    op.drop_index(KEY, "request")
    op.create_index(OLD_INDEX, "request", ["benchmark_id"])
