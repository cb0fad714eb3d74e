"""The gates of a campaign, in order: the one place that lists them.

Everything generic (the runner, the campaign workflow, the CLI, `gate status`, the report)
reads a gate's facts from its GateSpec; what is particular to a gate lives in its suite
package (`harness.gates.<suite>`: its plan, its config checks, how it releases what a
killed run left running). Adding a gate is a suite plus a spec here (docs/gates.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.config.decision import Deviation, deviations, g4_deviations
from harness.config.models import G1, G2, G3, G4, Frozen
from harness.errors import UsageError


@dataclass(frozen=True)
class GateSpec:
    id: str  # "G3": what users type, what the store records
    title: str  # English; the report's catalogs translate `gate.<id>`
    suite: str  # package under harness.gates holding the pytest suite
    groups: tuple[str, ...]  # inventory groups the gate needs before it starts
    prerequisite: str | None  # the gate that must stand PASS first (and, through it, all before)
    resumable: bool  # `gate resume RUN` may continue an unfinished run
    report_section: str  # key of the report's section registry (harness/report/sections)
    config_key: str  # its section under `gates:` in gate.yaml
    config_model: type[Frozen]  # that section's model
    # the gate's decision settings a stored config moved off their defaults (None: it has
    # none); the report lists the weakened ones beside the verdict
    deviations: Callable[[Mapping[str, Any]], list[Deviation]] | None = None
    compares_arms: bool = False  # an A/B gate: its runs store cells (drop, gain) per tier

    @property
    def package(self) -> str:
        return f"harness.gates.{self.suite}"

    @property
    def built(self) -> bool:
        """Whether this version of gate ships the gate's suite."""
        try:
            return importlib.util.find_spec(self.package) is not None
        except ModuleNotFoundError:  # harness.gates itself missing: a broken install
            return False


GATES: tuple[GateSpec, ...] = (
    GateSpec("G1", "arrival acceptance", "g1_arrival", ("gpu",), None, False, "g1",
             "g1", G1),
    GateSpec("G2", "single-node baselines", "g2_baseline", ("gpu",), "G1", False, "g2",
             "g2", G2),
    GateSpec("G3", "main gate (A/B)", "g3_main", (), "G2", True, "g3", "g3", G3,
             deviations, compares_arms=True),
    GateSpec("G4", "72 h stability", "g4_stability", ("gpu",), "G3", True, "g4", "g4",
             G4, g4_deviations),
)
GATE_IDS: tuple[str, ...] = tuple(g.id for g in GATES)
# the gate whose cells the fleet's headline column shows (its lowest drop and gain)
AB_GATE: str = next(g.id for g in GATES if g.compares_arms)


def gate_spec(gate_id: str) -> GateSpec:
    """The spec of `gate_id` (any case); a name that is no gate is a usage error."""
    for spec in GATES:
        if spec.id == gate_id.upper():
            return spec
    raise UsageError(f"{gate_id!r} is not a gate", hint=f"one of {', '.join(GATE_IDS)}")


def before(gate_id: str) -> tuple[GateSpec, ...]:
    """Every gate that must stand PASS before `gate_id` may run: its prerequisite, and that
    gate's, and so on."""
    chain: list[GateSpec] = []
    spec = gate_spec(gate_id)
    while spec.prerequisite is not None:
        spec = gate_spec(spec.prerequisite)
        chain.append(spec)
    return tuple(reversed(chain))


def from_gate(gate_id: str) -> tuple[GateSpec, ...]:
    """The gates from `gate_id` to the last, in campaign order."""
    start = gate_spec(gate_id)
    return GATES[GATES.index(start):]
