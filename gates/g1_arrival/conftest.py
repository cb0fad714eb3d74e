"""G1 fixtures: every host read once, all at once, at the start of the run; each check
then judges its host x item from what was read."""

from __future__ import annotations

import pytest

from harness.g1.collect import HostReading, read_all
from harness.g1.plan import PLAN_FACT, HostPlan, host_plans
from harness.pytest_plugin import GATE_KEY, GateContext


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    ctx: GateContext = metafunc.config.stash[GATE_KEY]
    plans = host_plans(ctx.loaded.config, ctx.inventory)
    if "item" in metafunc.fixturenames:
        pairs = [(p, i) for p in plans for i in p.items]
        metafunc.parametrize(("plan", "item"), pairs, ids=[f"{p.host}-{i}" for p, i in pairs])
    if "health" in metafunc.fixturenames:
        pairs = [(p, h) for p in plans for h in p.health]
        metafunc.parametrize(("plan", "health"), pairs,
                             ids=[f"{p.host}-{h}" for p, h in pairs])


@pytest.fixture(scope="session")
def readings(gate: GateContext) -> dict[str, HostReading]:
    """Every host's raw outputs, saved as artifacts (sha256 on record) before any check."""
    cfg = gate.loaded.config.gates.g1
    plans: list[HostPlan] = host_plans(gate.loaded.config, gate.inventory)
    for plan in plans:  # what each host must show, on record before anything is read
        gate.recorder.host_fact(host=plan.host, key=PLAN_FACT,
                                value={"items": list(plan.items), "health": list(plan.health)},
                                simulated=False)  # the config's plan, not a reading
    pool = gate.transport_pool()
    found = read_all(plans, pool.get, cfg.gdscheck, gate.artifact_dir / "g1",
                     cfg.probe_timeout)
    recorder = gate.recorder
    for reading in found.values():
        if reading.unreachable:
            recorder.event(source="g1", name="probe host", host=reading.host,
                           status="unreachable", message=reading.unreachable)
            continue
        for output in reading.outputs.values():
            if output.path is not None:
                recorder.artifact(output.path, kind=f"g1:{output.probe.name}",
                                  host=reading.host)
        recorder.event(source="g1", name="probe host", host=reading.host, status="ok",
                       message=f"{len(reading.outputs)} outputs"
                               + (" (simulated hardware)" if reading.simulated else ""))
    return found
