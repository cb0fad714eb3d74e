"""What a gate suite records about its own run: the suite's one door to the store.

A suite gets it as `gate.recorder` (harness.pytest_plugin.GateContext) and never imports
harness.store, so the store's modules can change (another backend, a remote agent that
forwards records) without touching a suite. Check outcomes are not here: the plugin
records those itself from pytest's reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.store import runs as store_runs
from harness.store import writer
from harness.store.db import Store


@dataclass(frozen=True)
class RunRecorder:
    """Records for one run; cheap to make, holds no state beyond the run's id."""

    store: Store
    run_id: int

    @property
    def campaign_id(self) -> int:
        """The run's campaign (the scope of what a killed run may have left running)."""
        return store_runs.get_run(self.store, self.run_id).campaign_id

    def event(self, *, source: str, name: str, host: str | None, status: str,
              message: str = "", duration: float = 0.0) -> None:
        """A step of the run worth showing (an action, an Ansible task, a cache drop);
        `status` is ok / changed / failed / unreachable / skipped."""
        store_runs.add_event(self.store, self.run_id, source=source, name=name, host=host,
                             status=status, message=message, duration=duration)

    def host_fact(self, *, host: str, key: str, value: Any, simulated: bool = False) -> None:
        """A fact read from a host (JSON value), shown on the report."""
        store_runs.add_host_fact(self.store, self.run_id, host=host, key=key, value=value,
                                 simulated=simulated)

    def earlier_facts(self, key: str) -> dict[str, tuple[int, Any]]:
        """host -> (run, value) of `key` in this campaign's earlier runs of the same gate."""
        return store_runs.earlier_facts(self.store, self.run_id, key)

    def artifact(self, path: Path, *, kind: str = "", host: str | None = None) -> str:
        """A file the run produced (kept under the run's artifact dir): recorded with its
        sha256, which `gate export` verifies; returns the digest."""
        return store_runs.add_artifact(self.store, self.run_id, path, kind=kind, host=host)

    def supersede_unpaired(self) -> int:
        """Before a resume: mark the phases of every pair that did not finish both arms as
        replaced (they stay on record, out of every count); returns how many."""
        return writer.supersede_unpaired(self.store, self.run_id)
