"""The engine processes gate runs started: recorded as they are seen, marked when gone.

A run records (host, pid, start ticks) of every engine it found listening after a start
or restart action, so that the run itself, or the next run / resume / abort of the
campaign after a crash, can make sure none is left holding a port or a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select, update

from harness.store.db import Store
from harness.store.schema import EngineProcessRow, RunRow


@dataclass(frozen=True)
class EngineProcess:
    id: int
    run_id: int
    host: str
    pid: int
    start_ticks: int
    arm: str
    layout: str
    instance: int
    url: str


def record_engine(store: Store, run_id: int, *, host: str, pid: int, start_ticks: int,
                  arm: str, layout: str, instance: int, url: str) -> int:
    """Record a process once per run: seeing the same one again is not a new row."""
    with store.session() as s:
        found = s.scalar(select(EngineProcessRow.id).where(
            EngineProcessRow.run_id == run_id, EngineProcessRow.host == host,
            EngineProcessRow.pid == pid, EngineProcessRow.start_ticks == start_ticks))
        if found is not None:
            return int(found)
        row = EngineProcessRow(run_id=run_id, host=host, pid=pid, start_ticks=start_ticks,
                               arm=arm, layout=layout, instance=instance, url=url,
                               started_at=time.time())
        s.add(row)
        s.flush()
        return row.id


def open_engines(store: Store, *, run_id: int | None = None,
                 campaign_id: int | None = None) -> list[EngineProcess]:
    """Recorded processes not yet known to be gone, of one run or of a whole campaign."""
    q = select(EngineProcessRow).where(EngineProcessRow.stopped_at.is_(None))
    if run_id is not None:
        q = q.where(EngineProcessRow.run_id == run_id)
    if campaign_id is not None:
        q = q.join(RunRow, RunRow.id == EngineProcessRow.run_id).where(
            RunRow.campaign_id == campaign_id)
    with store.session() as s:
        return [EngineProcess(r.id, r.run_id, r.host, r.pid, r.start_ticks, r.arm, r.layout,
                              r.instance, r.url)
                for r in s.scalars(q.order_by(EngineProcessRow.id))]


def mark_gone(store: Store, engine_id: int, note: str = "") -> None:
    with store.session() as s:
        s.execute(update(EngineProcessRow).where(EngineProcessRow.id == engine_id)
                  .values(stopped_at=time.time(), note=note))
