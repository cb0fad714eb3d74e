"""G1 arrival acceptance suite: the delivered hardware is what was ordered, host by host.

The plan (one check per host x BOM item and per host x health check, plus the clocks),
the config checks and the unverifiable items live in harness.g1.plan; HOOKS is what
generic code may ask this suite (harness/suite_hooks.py, docs/gates.md).
"""

from harness.config.inventory import Inventory
from harness.config.models import Bom, SiteConfig
from harness.g1.collect import probes_for
from harness.g1.plan import (
    expected_checks,
    host_plans,
    optional_checks,
    unconfigured,
    validate,
    weakened,
)
from harness.suite_hooks import Needs, SuiteHooks, ToolNeed

# Health checks that read the GPU item's nvidia-smi; Xid is absent on purpose: without a
# kernel log it is INCONCLUSIVE ("unverifiable"), never ERROR, so nothing to refuse.
_READS_NVIDIA_SMI = ("gpu-ecc", "gpu-link")
_NVME_SMART = "nvme-smart"  # smart-log of each controller `nvme list` found


def needs(config: SiteConfig, inventory: Inventory) -> Needs:
    """Each host's probe programs (harness.g1.collect.probes_for), by the checks whose
    result is ERROR without them."""
    found: dict[tuple[str, str, bool], tuple[tuple[str, ...], list[str], list[str]]] = {}

    def add(host: str, argv: tuple[str, ...], sudo: bool, check: str) -> None:
        _, checks, keys = found.setdefault((host, argv[0], sudo), (argv, [], []))
        checks.append(check)
        keys.append(check.rsplit(f"{host}-", 1)[1].rstrip("]"))  # the item / health key

    gdscheck = config.gates.g1.gdscheck
    for plan in host_plans(config, inventory):
        for item in plan.items:
            only = Bom.model_validate({item: getattr(plan.bom, item)})
            for probe in probes_for(only, (), gdscheck)[1:]:  # [0]: date, test_clocks'
                add(plan.host, probe.argv, probe.sudo, f"test_item[{plan.host}-{item}]")
        for health in plan.health:
            check = f"test_health[{plan.host}-{health}]"
            if health in _READS_NVIDIA_SMI:
                add(plan.host, ("nvidia-smi", "-q", "-x"), False, check)
            elif health == _NVME_SMART:
                add(plan.host, ("nvme", "list", "-o", "json"), True, check)
            elif health != "xid":
                for probe in probes_for(Bom(), (health,), gdscheck)[1:]:
                    add(plan.host, probe.argv, probe.sudo, check)
    # a missing tool is ERROR even for a check in gates.g1.optional: G1's way to run
    # without one is an unverifiable item (SKIPPED with its reason, on every host)
    return Needs(tools=tuple(
        ToolNeed(host, argv, tuple(checks), sudo,
                 instead="gates.g1.unverifiable: {" + ", ".join(
                     f"{k}: WHY" for k in dict.fromkeys(keys)) + "}")
        for (host, _, sudo), (argv, checks, keys) in found.items()))


HOOKS = SuiteHooks(expected_checks=expected_checks, validate=validate, weakened=weakened,
                   optional_checks=optional_checks, unconfigured=unconfigured, needs=needs)

__all__ = ["HOOKS"]
