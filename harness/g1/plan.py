"""G1's plan: for each host, the BOM items and health checks its groups' BOM asks for.

One check per host x item (`test_item[gpu1-gpu]`) and per host x health check
(`test_health[gpu1-gpu-ecc]`), plus one `test_clocks` across the hosts. An item or check
the site declares unverifiable (`gates.g1.unverifiable`) stays in the plan and is
recorded SKIPPED with the reason: shown, never a silent PASS.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.inventory import Inventory
from harness.config.models import G1_HEALTH, Bom, SiteConfig
from harness.errors import UsageError
from harness.registry import gate_spec

# The host fact the suite records per host before reading it: {"items": [...], "health":
# [...]}, so the report can show a planned check that produced no row as "not run".
PLAN_FACT = "g1 plan"
ITEMS = ("gpu", "nvme", "nic", "gds", "volume", "os", "software", "weights")


@dataclass(frozen=True)
class HostPlan:
    host: str
    group: str  # the group whose BOM applies
    bom: Bom
    items: tuple[str, ...]
    health: tuple[str, ...]


def _health(bom: Bom) -> tuple[str, ...]:
    wanted = {"pcie"}
    if bom.gpu is not None:
        wanted |= {"gpu-ecc", "gpu-link", "xid"}
    if bom.nvme is not None:
        wanted.add("nvme-smart")
    if bom.nic is not None and not bom.nic.interfaces:
        wanted.add("ib-ports")
    return tuple(h for h in G1_HEALTH if h in wanted)


def host_plans(config: SiteConfig, inventory: Inventory) -> list[HostPlan]:
    plans: dict[str, HostPlan] = {}
    for group, bom in config.gates.g1.bom.items():
        for spec in inventory.group(group):
            if spec.name in plans:
                raise UsageError(
                    f"host {spec.name} is in groups {plans[spec.name].group} and {group}, "
                    "both with a BOM", key=f"gates.g1.bom.{group}",
                    hint="give the host one group with a BOM")
            items = tuple(i for i in ITEMS if getattr(bom, i) not in (None, False))
            plans[spec.name] = HostPlan(spec.name, group, bom, items, _health(bom))
    return [plans[name] for name in sorted(plans)]


def expected_checks(config: SiteConfig, inventory: Inventory) -> list[str]:
    plans = host_plans(config, inventory)
    return ([f"test_item[{p.host}-{i}]" for p in plans for i in p.items]
            + [f"test_health[{p.host}-{h}]" for p in plans for h in p.health]
            + ["test_clocks"])


def optional_checks(config: SiteConfig, inventory: Inventory) -> list[str]:
    """The planned checks the site declared unverifiable: SKIPPED, not ERROR."""
    unverifiable = config.gates.g1.unverifiable
    return [c for c in expected_checks(config, inventory)
            if any(c.endswith(f"-{key}]") for key in unverifiable)]


# The item classes an arrival check of a GPU host is expected to cover beside the GPUs.
GPU_HOST_ITEMS = ("nvme", "nic", "volume", "software")


def _required_groups() -> tuple[str, ...]:
    """The inventory groups G1 exists for (its registry spec): each needs a BOM."""
    return gate_spec("G1").groups


def weakened(config: SiteConfig) -> list[str]:
    """What a real site's arrival evidence leaves out, so a reviewer signs a PASS: items
    declared unverifiable, and item classes the gpu group's BOM does not order."""
    if config.simulated:
        return []
    lines = [f"G1 {item} not checked: {why}" for item, why in
             sorted(config.gates.g1.unverifiable.items())]
    for group in _required_groups():
        bom = config.gates.g1.bom.get(group)
        if bom is not None:
            lines += [f"G1 {group} group: no {item} in its BOM (not checked at arrival)"
                      for item in GPU_HOST_ITEMS if getattr(bom, item) is None]
    return lines


def validate(config: SiteConfig, inventory: Inventory) -> None:
    g1 = config.gates.g1
    if not g1.bom:
        raise UsageError("G1 needs a bill of materials", key="gates.g1.bom",
                         hint="e.g. bom: {gpu: {gpu: {model: H100, count: 8}}}")
    for group in g1.bom:
        if group not in inventory.groups:
            raise UsageError(f"no inventory group {group!r}", key=f"gates.g1.bom.{group}",
                             hint=f"groups: {', '.join(sorted(inventory.groups))}")
    known = set(ITEMS) | set(G1_HEALTH)
    for key in g1.unverifiable:
        if key not in known:
            raise UsageError(f"{key!r} is no G1 item or health check",
                             key=f"gates.g1.unverifiable.{key}",
                             hint=f"one of {', '.join(sorted(known))}")
    for group in _required_groups():  # the hosts the gate exists for are checked
        bom = g1.bom.get(group)
        if bom is None:
            raise UsageError(f"G1 needs a BOM for the {group} group", key=f"gates.g1.bom.{group}",
                             hint=f"e.g. {group}: {{gpu: {{model: H100, count: 8}}}}")
        if bom.gpu is None:
            raise UsageError(f"the {group} group's BOM orders no GPU",
                             key=f"gates.g1.bom.{group}.gpu",
                             hint="e.g. gpu: {model: H100, count: 8}")
    host_plans(config, inventory)


def unconfigured(config: SiteConfig) -> str | None:
    """Why this config does not set G1 up yet, or None."""
    if not config.gates.g1.bom:
        return "not configured (no gates.g1.bom; `gate run G1` will ask for it)"
    return None
