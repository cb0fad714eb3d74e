"""Copy the rows of some runs from one store into another, fresh one (the evidence pack's
SQLite), and fold a SQLite store into one self-contained file.

Here, not in the report, because the store is the only door to the gate's database: the
exporter names runs and a destination, the store walks its own tables. Every table of the
schema is walked in dependency order: site / campaign / run by id, tables with a run_id
by run, requests through their benchmarks. Rows stream through SQLAlchemy Core in
batches, so a G4 run's million requests never sit in memory at once. A table the walker
does not know how to scope is skipped and named in the result, never copied whole.

Rows are copied as they are, ids and uids included: a copied row keeps its identity, so
the same run copied twice (two packs, or a pack and its source) has the same uids, and a
merge of both sees one run, not two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Table, insert, select

from harness.store.db import Store
from harness.store.schema import Base, BenchmarkRow, CampaignRow, RunRow

BATCH = 20000
NOT_COPIED = ("run_lock",)  # a lock belongs to a live process, not to the evidence


@dataclass
class CopyResult:
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows copied
    skipped: list[str] = field(default_factory=list)  # tables not copied


def _scope(table: Table, run_ids: list[int], site_ids: list[int],
           campaign_ids: list[int]) -> Any:
    cols = table.c
    if table.name == "site":
        return cols.id.in_(site_ids)
    if table.name == "campaign":
        return cols.id.in_(campaign_ids)
    if table.name == "run":
        return cols.id.in_(run_ids)
    if "run_id" in cols:
        return cols.run_id.in_(run_ids)
    if "benchmark_id" in cols:
        bench = select(BenchmarkRow.id).where(BenchmarkRow.run_id.in_(run_ids))
        return cols.benchmark_id.in_(bench)
    return None


def copy_runs(src: Store, dst: Store, run_ids: list[int]) -> CopyResult:
    """Copy `run_ids` with their campaigns, sites and every row that belongs to them."""
    result = CopyResult()
    with src.engine.connect() as conn:
        campaign_ids = sorted({int(x) for x in conn.scalars(
            select(RunRow.campaign_id).where(RunRow.id.in_(run_ids)))})
        site_ids = sorted({int(x) for x in conn.scalars(
            select(CampaignRow.site_id).where(CampaignRow.id.in_(campaign_ids)))})
        for table in Base.metadata.sorted_tables:
            where = _scope(table, run_ids, site_ids, campaign_ids)
            if table.name in NOT_COPIED or where is None:
                result.skipped.append(table.name)
                continue
            stream = conn.execution_options(stream_results=True, yield_per=BATCH).execute(
                select(table).where(where).order_by(*table.primary_key.columns))
            n = 0
            for part in stream.partitions(BATCH):
                rows = [dict(r._mapping) for r in part]
                with dst.engine.begin() as out:
                    out.execute(insert(table), rows)
                n += len(rows)
            result.rows[table.name] = n
    return result


def close_for_copy(store: Store) -> None:
    """Fold the WAL back into the main file so the pack holds one self-contained file,
    and close the store."""
    with store.engine.connect() as conn:
        if store.engine.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.exec_driver_sql("PRAGMA journal_mode=DELETE")
    store.close()
