"""G2 parametrization from the site config (the same functions declare the plan). A
check the config does not ask for (no fio target, gds: false) is not collected at all:
an empty parameter set would otherwise stand as a skipped check."""

from __future__ import annotations

import pytest

from harness.g2.plan import fio_cells, gpu_hosts
from harness.pytest_plugin import GATE_KEY, GateContext


def _asked(ctx: GateContext) -> dict[str, bool]:
    g2 = ctx.loaded.config.gates.g2
    return {"test_fio": bool(fio_cells(ctx.loaded.config, ctx.inventory)),
            "test_gpu_health": g2.gpu_health and bool(gpu_hosts(ctx.inventory)),
            "test_gds": g2.gds and bool(gpu_hosts(ctx.inventory))}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    ctx: GateContext = metafunc.config.stash[GATE_KEY]
    if not _asked(ctx).get(metafunc.function.__name__, True):
        metafunc.parametrize("cell" if "cell" in metafunc.fixturenames else "gpu_host", [None])
        return
    if "cell" in metafunc.fixturenames:
        cells = fio_cells(ctx.loaded.config, ctx.inventory)
        metafunc.parametrize("cell", cells, ids=[c.key for c in cells])
    if "gpu_host" in metafunc.fixturenames:
        hosts = gpu_hosts(ctx.inventory)
        metafunc.parametrize("gpu_host", hosts, ids=hosts)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = _asked(config.stash[GATE_KEY])
    items[:] = [i for i in items if asked.get(getattr(i, "originalname", i.name), True)]
