"""G2's plan: per host of a target's group, the four fio jobs; per GPU host, GPU health
and (when asked) GDS."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.inventory import Inventory
from harness.config.models import G2, FioTarget, SiteConfig
from harness.errors import UsageError

# Below the default share of the vendor's figures a PASS is weaker: a reviewer signs it.
DEFAULT_MIN_FRACTION: float = G2.model_fields["min_fraction"].default

JOBS = ("seq-read", "seq-write", "rand-read", "lat-qd1")


@dataclass(frozen=True)
class FioCell:
    host: str
    target: FioTarget
    job: str

    @property
    def key(self) -> str:
        return f"{self.host}-{self.target.name}-{self.job}"


def fio_cells(config: SiteConfig, inventory: Inventory) -> list[FioCell]:
    return [FioCell(h.name, t, job) for t in config.gates.g2.fio
            for h in inventory.group(t.group) for job in JOBS]


def gpu_hosts(inventory: Inventory) -> list[str]:
    return [h.name for h in inventory.group("gpu")]


def expected_checks(config: SiteConfig, inventory: Inventory) -> list[str]:
    g2 = config.gates.g2
    checks = [f"test_fio[{c.key}]" for c in fio_cells(config, inventory)]
    if g2.gpu_health:
        checks += [f"test_gpu_health[{h}]" for h in gpu_hosts(inventory)]
    if g2.gds:
        checks += [f"test_gds[{h}]" for h in gpu_hosts(inventory)]
    return checks


def weakened(config: SiteConfig) -> list[str]:
    g2 = config.gates.g2
    out = [f"G2 fio {t.name}: direct: false (the page cache may serve reads)"
           for t in g2.fio if not t.direct]
    out += [f"G2 fio {t.name}: no vendor figures, measured but not judged"
            for t in g2.fio if t.spec == type(t.spec)()]
    if g2.min_fraction < DEFAULT_MIN_FRACTION:
        out.append(f"G2 fio: min_fraction {g2.min_fraction:g} of the vendor's figures "
                   f"(default {DEFAULT_MIN_FRACTION:g})")
    return [] if config.simulated else out


def validate(config: SiteConfig, inventory: Inventory) -> None:
    g2 = config.gates.g2
    if not g2.fio and not g2.gpu_health and not g2.gds:
        raise UsageError("G2 has nothing to measure", key="gates.g2",
                         hint="add fio targets, or gpu_health / gds")
    seen = set()
    for i, t in enumerate(g2.fio):
        key = f"gates.g2.fio.{i}"
        if t.name in seen:
            raise UsageError(f"two fio targets named {t.name!r}", key=f"{key}.name")
        seen.add(t.name)
        if t.group not in inventory.groups:
            raise UsageError(f"no inventory group {t.group!r}", key=f"{key}.group")
        if t.path.startswith("/dev/") and not t.destructive:
            raise UsageError(f"{t.path} is a raw device: fio's write job would overwrite it",
                             key=f"{key}.path",
                             hint="use a file or directory, or set destructive: true")
