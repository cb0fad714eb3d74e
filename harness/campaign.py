"""Gate order within a campaign: G1 -> G2 -> G3 -> G4, and what a gate needs before it runs."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import PrerequisiteError
from harness.store import Store
from harness.store import runs as store_runs
from harness.store.schema import RunRow
from harness.verdict import GATES


@dataclass(frozen=True)
class GateState:
    gate: str
    run: RunRow | None  # latest non-partial finished-or-aborted gate run
    verdict: str  # effective verdict, or "not run"
    latest_any: RunRow | None  # latest run of any kind (partial / running included)


def gate_states(store: Store, campaign: str, *, include_simulated: bool = True,
                custom_suites: bool = False) -> list[GateState]:
    """Each gate's standing run. A run of another suite than the packaged one (the
    harness's own tests) never stands for a gate; with `custom_suites` only such runs
    count (they may open each other, for the tests of the gate order)."""
    states = []
    for gate in GATES:
        history = [r for r in store_runs.runs(store, campaign=campaign, gate=gate, kind="gate")
                   if bool(r.suite) == custom_suites]
        counted = [r for r in history if not r.partial and r.status != "RUNNING"
                   and (include_simulated or not r.simulated)]
        latest = counted[-1] if counted else None
        verdict = store_runs.effective_verdict(store, latest) if latest else "not run"
        states.append(GateState(gate, latest, verdict, history[-1] if history else None))
    return states


def check_prerequisites(store: Store, campaign: str, gate: str, *,
                        simulated: bool = False, custom_suite: bool = False) -> None:
    """Refuse (exit 4) unless every earlier gate's latest non-partial run is PASS. A run
    against simulated hardware satisfies only a simulated campaign, never a real one; a
    custom suite's run satisfies only another custom suite's."""
    earlier = GATES[: GATES.index(gate)]
    states = {s.gate: s for s in gate_states(store, campaign, include_simulated=simulated,
                                             custom_suites=custom_suite)}
    for g in earlier:
        state = states[g]
        if state.verdict != "PASS":
            found = (f"its latest run {state.run.id} is {state.verdict}" if state.run
                     else "it has not run (partial runs do not count)")
            raise PrerequisiteError(
                f"{gate} needs {g} passed first, and {found}",
                hint=f"run `gate run {g}` first, or `gate run {gate} --force` (recorded as FORCED)",
            )
