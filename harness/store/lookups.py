"""Small reads across runs: what an earlier gate of the campaign recorded about a host,
and where a run kept an artifact of a kind. Read-only; harness.store.runs writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select

from harness.store.db import Store
from harness.store.schema import ArtifactRow, HostFactRow, RunRow


def gate_facts(store: Store, run_id: int, gate: str | None, key: str, *,
               earlier: bool = False) -> dict[str, tuple[int, Any]]:
    """host -> (run, value): the latest `key` each host has in a run of `gate` (None: the
    run's own gate) in the run's campaign; `earlier`: only runs before it. G3 reads the
    GPUs G1 counted on each host; G1 what the arrival before a part was replaced saw."""
    with store.session() as s:
        run = s.get(RunRow, run_id)
        if run is None:
            return {}
        q = (select(HostFactRow.host, HostFactRow.value, RunRow.id)
             .join(RunRow, RunRow.id == HostFactRow.run_id)
             .where(RunRow.campaign_id == run.campaign_id,
                    RunRow.gate == (gate if gate is not None else run.gate),
                    HostFactRow.key == key)
             .order_by(RunRow.id, HostFactRow.id))
        if earlier:
            q = q.where(RunRow.id < run_id)
        return {host: (rid, value) for host, value, rid in s.execute(q)}


def artifact_paths(store: Store, run_id: int, kind: str) -> list[Path]:
    """Where run_id kept its artifacts of `kind`, oldest first."""
    with store.session() as s:
        q = (select(ArtifactRow.path).where(ArtifactRow.run_id == run_id,
                                            ArtifactRow.kind == kind)
             .order_by(ArtifactRow.id))
        return [Path(p) for p in s.scalars(q)]
