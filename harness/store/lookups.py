"""Small reads across runs: what an earlier gate of the campaign recorded about a host,
and where a run kept an artifact of a kind. Read-only; harness.store.runs writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from harness.store.db import Store
from harness.store.runs import find_campaign
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


@dataclass(frozen=True)
class Fact:
    """A host fact as a later reader needs it: its value, the run that recorded it, and
    whether that run's host was simulated."""

    run: int
    value: Any
    simulated: bool


def campaign_facts(store: Store, campaign: str, gate: str,
                   keys: Sequence[str]) -> dict[str, dict[str, Fact]]:
    """key -> host -> the latest Fact of `key` a run of `gate` recorded for the host in
    `campaign` ("SITE/CAMPAIGN" or a bare name: harness.store.runs.find_campaign). Runs of
    another suite than the packaged one (the harness's own tests) are left out: they never
    stand for a gate. `gate plan` reads what G2 measured with it."""
    if not keys:
        return {}
    found = find_campaign(store, campaign)
    if found is None:
        return {}
    with store.session() as s:
        q = (select(HostFactRow.key, HostFactRow.host, HostFactRow.value,
                    HostFactRow.simulated, RunRow.id)
             .join(RunRow, RunRow.id == HostFactRow.run_id)
             .where(RunRow.campaign_id == found.id, RunRow.gate == gate,
                    RunRow.kind == "gate", RunRow.suite == "",
                    HostFactRow.key.in_(list(keys)))
             .order_by(RunRow.id, HostFactRow.id))
        out: dict[str, dict[str, Fact]] = {}
        for key, host, value, simulated, rid in s.execute(q):
            out.setdefault(key, {})[host] = Fact(rid, value, bool(simulated))
        return out
