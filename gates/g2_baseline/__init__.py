"""G2 single-node baselines suite: fio on the configured targets, GPU health, GDS, and the
serving baseline of the baseline arm.

The plan and the config checks live in harness.g2.plan, the engines' release after a
killed run in harness.g2.serving_run; HOOKS is what generic code may ask this suite
(harness/suite_hooks.py, docs/gates.md).
"""

from harness.config.inventory import Inventory
from harness.config.models import SiteConfig
from harness.g2 import gdsio as g2gdsio
from harness.g2.plan import (
    expected_checks,
    fio_cells,
    gpu_hosts,
    serving_cells,
    validate,
    weakened,
)
from harness.g2.serving_run import release
from harness.suite_hooks import Needs, SuiteHooks, ToolNeed

_FINDMNT = ("findmnt", "-n", "-T", ".")  # what a target's directory is on (its mount)


def needs(config: SiteConfig, inventory: Inventory) -> Needs:
    """fio and findmnt where a target is measured, nvidia-smi (dcgmi's hosts have it too)
    for GPU health, gdscheck / gdsio where GDS is checked, the load agent for the serving
    baseline on a client host."""
    g2 = config.gates.g2
    tools: list[ToolNeed] = []
    by_host: dict[str, list[str]] = {}
    for cell in fio_cells(config, inventory):
        by_host.setdefault(cell.host, []).append(f"test_fio[{cell.key}]")
    for host, checks in by_host.items():
        tools += [ToolNeed(host, ("fio", "--version"), tuple(checks)),
                  ToolNeed(host, _FINDMNT, tuple(checks))]
    for host in gpu_hosts(inventory):
        if g2.gpu_health:
            tools.append(ToolNeed(host, ("nvidia-smi", "-q", "-x"),
                                  (f"test_gpu_health[{host}]",)))
        if g2.gds:
            tools.append(ToolNeed(host, (g2.gdscheck, "-p"), (f"test_gds[{host}]",)))
        if g2.gdsio is not None:
            check = (f"test_gdsio[{host}]",)
            # the very command the check sends: a simulated host answers it from a capture
            tools += [ToolNeed(host, tuple(g2gdsio.argv(g2.gdsio)), check),
                      ToolNeed(host, _FINDMNT, check)]
    serving = [f"test_serving[{c.key}]" for c in serving_cells(config)]
    return Needs(tools=tuple(tools),
                 load_agent=tuple(serving) if config.load.placement == "client" else ())


HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   release=release, needs=needs)

__all__ = ["HOOKS"]
