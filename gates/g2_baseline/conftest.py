"""G2 parametrization from the site config (the same functions declare the plan). A
check the config does not ask for (no fio target, gds: false) is not collected at all:
an empty parameter set would otherwise stand as a skipped check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.g2.plan import fio_cells, gpu_hosts, serving_cells, serving_layouts
from harness.g2.serving_run import ServingBaseline
from harness.pytest_plugin import GATE_KEY, GateContext
from harness.remote.placement import load_executor
from harness.serving.arms import ArmControl, transport_action_runner
from harness.serving.cells import layouts
from harness.serving.enginelogs import EngineLogs
from harness.serving.engines import EngineWatch, clean_slate


def _asked(ctx: GateContext) -> dict[str, bool]:
    g2 = ctx.loaded.config.gates.g2
    return {"test_fio": bool(fio_cells(ctx.loaded.config, ctx.inventory)),
            "test_gpu_health": g2.gpu_health and bool(gpu_hosts(ctx.inventory)),
            "test_gds": g2.gds and bool(gpu_hosts(ctx.inventory)),
            "test_gdsio": g2.gdsio is not None and bool(gpu_hosts(ctx.inventory)),
            "test_serving": bool(serving_cells(ctx.loaded.config)),
            "test_engine_version": bool(serving_cells(ctx.loaded.config))}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    ctx: GateContext = metafunc.config.stash[GATE_KEY]
    if not _asked(ctx).get(metafunc.function.__name__, True):
        name = next(n for n in ("cell", "serving_cell", "serving_layout", "gpu_host")
                    if n in metafunc.fixturenames)
        metafunc.parametrize(name, [None])
        return
    if "cell" in metafunc.fixturenames:
        cells = fio_cells(ctx.loaded.config, ctx.inventory)
        metafunc.parametrize("cell", cells, ids=[c.key for c in cells])
    if "gpu_host" in metafunc.fixturenames:
        hosts = gpu_hosts(ctx.inventory)
        metafunc.parametrize("gpu_host", hosts, ids=hosts)
    if "serving_cell" in metafunc.fixturenames:
        chosen = serving_cells(ctx.loaded.config)
        metafunc.parametrize("serving_cell", chosen, ids=[c.key for c in chosen])
    if "serving_layout" in metafunc.fixturenames:
        started = serving_layouts(ctx.loaded.config)
        metafunc.parametrize("serving_layout", started, ids=[la.name for la in started])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = _asked(config.stash[GATE_KEY])
    items[:] = [i for i in items if asked.get(getattr(i, "originalname", i.name), True)]


@pytest.fixture(scope="session")
def serving(gate: GateContext) -> Iterator[ServingBaseline]:
    """The baseline arm's control as G3 builds it: a clean slate first (nothing an earlier
    run left may serve), every engine this run started stopped at its end."""
    cfg = gate.loaded.config
    pool = gate.transport_pool()
    runner = transport_action_runner(pool, gate.inventory, gate.loaded.known_hosts_path,
                                     gate.artifact_dir, gate.recorder.event,
                                     become_password=gate.sudo_password)
    control = ArmControl(cfg, gate.inventory, runner)
    watch = EngineWatch(cfg, gate.inventory, pool, gate.store, gate.run_id,
                        gate.recorder.event,
                        logs=EngineLogs(cfg, pool, gate.store, gate.run_id,
                                        gate.recorder.event, gate.artifact_dir))
    clean_slate(watch, control, layouts(cfg), gate.recorder.campaign_id)
    executor = load_executor(gate.loaded, gate.inventory, pool, gate.run_id)
    try:
        yield ServingBaseline(gate=gate, control=control, watch=watch, executor=executor)
    finally:
        watch.sweep()
