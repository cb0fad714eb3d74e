"""G4 fixtures: one soak per run, viewed by the session fixture and judged once; every
check reads that judgement. On `gate resume` the soak this run started is re-attached to,
never started twice, and its engines are left serving it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.g4.criteria import CRITERIA
from harness.g4.detached import clean_client_spool
from harness.g4.hardware_probe import HardwareProbe, HardwareWatch
from harness.g4.outcome import G4Outcome
from harness.g4.session import G4Session
from harness.pytest_plugin import GATE_KEY, GateContext
from harness.serving.arms import ArmControl, transport_action_runner
from harness.serving.cells import layouts
from harness.serving.disks import kv_volume_sources, storage_sources
from harness.serving.enginelogs import EngineLogs
from harness.serving.engines import EngineWatch, clean_slate


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "criterion" in metafunc.fixturenames:
        assert metafunc.config.stash[GATE_KEY] is not None
        metafunc.parametrize("criterion", list(CRITERIA), ids=list(CRITERIA))


@pytest.fixture(scope="session")
def g4(gate: GateContext) -> Iterator[G4Outcome]:
    cfg = gate.loaded.config
    pool = gate.transport_pool()
    recorder = gate.recorder
    event = recorder.event
    runner = transport_action_runner(pool, gate.inventory, gate.loaded.known_hosts_path,
                                     gate.artifact_dir, event,
                                     become_password=gate.sudo_password)
    control = ArmControl(cfg, gate.inventory, runner)
    watch = EngineWatch(cfg, gate.inventory, pool, gate.store, gate.run_id, event,
                        logs=EngineLogs(cfg, pool, gate.store, gate.run_id, event,
                                        gate.artifact_dir))
    ev = cfg.gates.g3.evidence  # the accelerator's devices are the site's, as G3 reads them
    storage = storage_sources([(h.name, pool.get(h.name)) for group in ev.storage_groups
                               if group in gate.inventory.groups
                               for h in gate.inventory.group(group)], ev.diskstats, ev.devices)
    session = G4Session(gate=gate, artifact_dir=gate.artifact_dir, control=control,
                        watch=watch, event=event, storage=storage, pool=pool)
    gpu_hosts = {i.host: pool.get(i.host) for i in session.layout.instances}
    session.kv_volumes = kv_volume_sources(gpu_hosts, ev.kv_volume)
    storage_hosts = {h.name: pool.get(h.name) for group in ev.storage_groups
                     if group in gate.inventory.groups for h in gate.inventory.group(group)}
    declared = frozenset(cfg.gates.g4.unverifiable)
    session.hardware = HardwareWatch(HardwareProbe(gpu_hosts, storage_hosts, declared),
                                     gate.store, gate.run_id, event)
    outcome = session.run(lambda: clean_slate(watch, control, layouts(cfg), recorder.campaign_id))
    clean_client_spool(session)  # placement: client, every window stored: its spool goes
    yield outcome
