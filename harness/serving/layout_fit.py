"""Does a layout fit the GPUs its hosts have? tp x pp GPUs per instance, summed over the
layout's instances on each host, against the GPUs found there.

Why: engines report the TP they were started with, not whether the GPUs behind it exist
(a simulator, or an engine sharing GPUs, says tp=8 on a host with two): "the arms match
the declared layout" must not pass a layout its hosts cannot hold. The count comes from
G1 (nvidia-smi on that host, the latest G1 run of the campaign), else from the BOM of
the host's inventory group; a host with neither cannot be checked. Pure: the caller
(harness/g3/preflight.py) reads the store and the config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.config.bom import declared_gpus
from harness.config.inventory import Inventory
from harness.config.models import G1, Layout
from harness.reasons import Reason


@dataclass(frozen=True)
class HostGpus:
    """How many GPUs a host has, and who says so: a G1 run (nvidia-smi), else a BOM."""

    host: str
    count: int
    g1_run: int | None = None
    bom_group: str | None = None

    @property
    def source(self) -> str:
        if self.g1_run is not None:
            return f"G1 run {self.g1_run}, nvidia-smi"
        return f"the {self.bom_group} group's BOM; no G1 record"


def ordered_gpus(g1: G1, inventory: Inventory) -> dict[str, HostGpus]:
    """What the BOM of each inventory host's group orders (hosts whose group orders no
    GPU are left out): the count a layout is held to where G1 has not counted."""
    return {name: HostGpus(name, found[1], bom_group=found[0])
            for name, spec in inventory.hosts.items()
            if (found := declared_gpus(g1, spec.groups)) is not None}


@dataclass(frozen=True)
class Need:
    host: str
    instances: int  # the layout's instances on this host
    gpus: int  # instances x tp x pp


@dataclass(frozen=True)
class Misfit:
    layout: str
    tp: int
    pp: int
    need: Need
    found: HostGpus | None  # None: nothing says how many GPUs the host has

    @property
    def per(self) -> str:
        return f"tp={self.tp}" + (f" x pp={self.pp}" if self.pp != 1 else "")

    def text(self) -> str:
        wants = (f"layout {self.layout} needs {self.need.gpus} GPUs on {self.need.host} "
                 f"({self.per} x {self.need.instances} instance(s))")
        if self.found is None:
            return (f"{wants}, and no G1 record nor BOM says how many it has: the layout "
                    "cannot be checked against its GPUs")
        return f"{wants}, {self.found.count} found ({self.found.source})"

    def why(self) -> Reason:
        """text() as a reason code (the report's languages)."""
        base: dict[str, str | int] = {"layout": self.layout, "host": self.need.host,
                                      "need": self.need.gpus, "per": self.per,
                                      "instances": self.need.instances}
        if self.found is None:
            return Reason("g3.layout_gpus_unknown", base)
        if self.found.g1_run is not None:
            return Reason("g3.layout_gpus_g1", {**base, "found": self.found.count,
                                                "run": self.found.g1_run})
        return Reason("g3.layout_gpus_bom", {**base, "found": self.found.count,
                                             "group": str(self.found.bom_group)})


def needs(layout: Layout) -> list[Need]:
    """GPUs the layout takes on each of its hosts, in the order the hosts first appear."""
    count: dict[str, int] = {}
    for inst in layout.instances:
        count[inst.host] = count.get(inst.host, 0) + 1
    per = layout.tp * layout.pp
    return [Need(host, n, n * per) for host, n in count.items()]


def misfits(layout: Layout, gpus: Mapping[str, HostGpus]) -> list[Misfit]:
    """Each host of the layout that has fewer GPUs than it needs, or whose count nobody
    knows (never assumed enough)."""
    return [Misfit(layout.name, layout.tp, layout.pp, need, gpus.get(need.host))
            for need in needs(layout)
            if need.host not in gpus or gpus[need.host].count < need.gpus]
