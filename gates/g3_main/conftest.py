"""G3 fixtures: the session that drives arms, load and evidence; cells parametrized from
the site config at collection time (the same functions declare the suite's plan)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.errors import InfrastructureError
from harness.g3.session import G3Session
from harness.pytest_plugin import GATE_KEY, GateContext
from harness.remote.placement import load_executor, stop_left_phases
from harness.serving.arms import ArmControl, transport_action_runner
from harness.serving.cells import cells, layouts
from harness.serving.disks import kv_volume_sources, storage_sources
from harness.serving.enginelogs import EngineLogs
from harness.serving.engines import EngineWatch, clean_slate

DROP_CACHES = "sync && echo 3 > /proc/sys/vm/drop_caches"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    ctx = metafunc.config.stash[GATE_KEY]
    cfg = ctx.loaded.config
    if "cell" in metafunc.fixturenames:
        all_cells = cells(cfg)
        metafunc.parametrize("cell", all_cells, ids=[c.key for c in all_cells])
    if "layout" in metafunc.fixturenames:
        chosen = layouts(cfg)
        metafunc.parametrize("layout", chosen, ids=[la.name for la in chosen])


@pytest.fixture(scope="session")
def g3(gate: GateContext) -> Iterator[G3Session]:
    cfg = gate.loaded.config
    pool = gate.transport_pool()

    recorder = gate.recorder
    event = recorder.event

    runner = transport_action_runner(pool, gate.inventory, gate.loaded.known_hosts_path,
                                     gate.artifact_dir, event,
                                     become_password=gate.sudo_password)
    ev = cfg.gates.g3.evidence
    storage = storage_sources([(h.name, pool.get(h.name))
                               for group in ev.storage_groups
                               if group in gate.inventory.groups
                               for h in gate.inventory.group(group)],
                              ev.diskstats, ev.devices)
    # Resolved before anything is measured: a volume not mounted is an ERROR now, not an
    # INCONCLUSIVE after hours of load.
    kv_volumes = kv_volume_sources(
        {i.host: pool.get(i.host) for la in layouts(cfg) for i in la.instances}, ev.kv_volume)
    for name, source in kv_volumes.items():
        event(source="harness", name="kv volume", host=name, status="ok",
              message=f"device {source.majmin}, read from {source.path}")

    def drop_caches(groups: list[str]) -> None:
        names = sorted({h.name for g in groups for h in gate.inventory.group(g)})
        for name in names:
            result = pool.get(name).run_shell(DROP_CACHES, sudo=True, timeout=300)
            event(source="harness", name="drop page cache", host=name,
                  status="ok" if result.rc == 0 else "failed", message=result.stderr[-500:])
            if result.rc != 0:
                # Without the drop a read may come from RAM and inflate the gain: never PASS.
                raise InfrastructureError(f"page-cache drop failed: {result.stderr.strip()}",
                                          host=name, command=DROP_CACHES, stage="drop_caches")

    control = ArmControl(cfg, gate.inventory, runner)
    watch = EngineWatch(cfg, gate.inventory, pool, gate.store, gate.run_id, event,
                        logs=EngineLogs(cfg, pool, gate.store, gate.run_id, event,
                                        gate.artifact_dir))
    executor = load_executor(gate.loaded, gate.inventory, pool, gate.run_id)
    if gate.resume_from is not None:
        # No load of the killed run may still reach an engine: its phases left on the
        # client host are stopped and read first (their records kept, out of every count).
        stop_left_phases(executor, gate.store, gate.run_id)
        # The unfinished pair is measured again from its start; its phases stay on record.
        recorder.supersede_unpaired()
    # Nothing left over from a killed run may serve, hold a port, or answer for an arm.
    clean_slate(watch, control, layouts(cfg), recorder.campaign_id)
    try:
        yield G3Session(gate=gate, control=control, watch=watch, drop_caches=drop_caches,
                        storage=storage, kv_volumes=kv_volumes, executor=executor)
    finally:
        watch.sweep()  # every engine this run started is gone when it ends
