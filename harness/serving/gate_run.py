"""What a gate's serving session uses of the running gate, and how often it measures a
disturbed pair again: the contract G3's session and G2's serving baseline share (each
passes harness.pytest_plugin.GateContext), kept apart from the session that measures."""

from __future__ import annotations

from typing import Protocol

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.store import Store

# How many times a disturbed pair is measured again before the cell gives up on it.
REMEASURES = 2


class GateRun(Protocol):
    """What a serving session (G3's cells, G2's baseline) uses of the running gate
    (harness.pytest_plugin.GateContext)."""

    @property
    def run_id(self) -> int: ...
    @property
    def store(self) -> Store: ...
    @property
    def loaded(self) -> LoadedConfig: ...
    @property
    def inventory(self) -> Inventory: ...
    def mark_simulated(self) -> None: ...
