"""What G2 measured, as the planner reads it: G2's host facts turned into bytes / s and
tokens / s (pure: the caller reads the facts from the store).

Why here and pure: `gate plan` (the workflow) and the G3 report's plan section (a leaf
that may not import the workflow) both hold the plan against G2's figures, and must read
them alike. G2's suite records them as host facts with keys of its own (`fio <target>
seq-read` in MB/s, `gdsio read GiB/s`, `serving prefill <layout>-c<tier>` with each
repetition's TTFT p50 and throughput); this module knows those keys. The store read
itself (harness.store.lookups.campaign_facts with GATE and `fact_keys`) is the caller's:
the planner does no I/O and sits beside the store, not above it.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.config.models import CommandAction, FioTarget, SiteConfig
from harness.plan.compare import Measured
from harness.plan.inputs import Sourced

GATE = "G2"  # the gate whose host facts these are
GDSIO_KEY = "gdsio read GiB/s"


class Fact(Protocol):
    """A host fact as the store's campaign_facts returns it (harness.store.lookups.Fact)."""

    @property
    def run(self) -> int: ...
    @property
    def value(self) -> Any: ...
    @property
    def simulated(self) -> bool: ...


Facts = Mapping[str, Mapping[str, Fact]]  # key -> host -> fact


@dataclass(frozen=True)
class Serving:
    """G2's serving baseline at one cell: the medians over its repetitions, in the
    simulator's modelled time when the run's engines ran at a speed factor."""

    host: str
    run: int
    ttft_p50_s: float
    throughput_tps: float
    simulated: bool
    speed: float | None = None  # the simulator's --speed the figures were scaled back by

    def source(self, cell: str) -> str:
        """`G2 run 3 TP8-c16`, and the speed its simulated times were scaled back by."""
        return f"G2 run {self.run} {cell}" + (f" (simulated x{self.speed:g}, modelled "
                                              "time)" if self.speed else "")


def sim_speed(config: SiteConfig) -> float | None:
    """The simulated baseline arm's --speed (every modelled duration divided by it, docs/
    sim.md), from its start command in a simulated config; None elsewhere."""
    start = config.arms.baseline.start if config.arms is not None else None
    if not config.simulated or not isinstance(start, CommandAction):
        return None
    words = list(start.command)
    for i, word in enumerate(words[:-1]):
        if word == "--speed":
            try:
                speed = float(words[i + 1])
            except ValueError:
                return None
            return speed if speed > 0 else None
    return None


@dataclass(frozen=True)
class G2Measured:
    campaign: str
    volume: FioTarget | None  # the fio target that is the accelerator's volume
    seq_read: Mapping[str, Fact]  # host -> MB/s
    seq_write: Mapping[str, Fact]
    gdsio: Mapping[str, Fact]  # host -> GiB/s
    serving: Mapping[str, Serving]  # cell key (TP8-c16) -> figures
    notes: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.seq_read or self.seq_write or self.gdsio or self.serving)


def volume_target(config: SiteConfig) -> FioTarget | None:
    """plan.volume; else the fio target declared on the mount or device of G3's KV volume;
    else the only fio target; else None (the plan says to set plan.volume)."""
    targets = config.gates.g2.fio
    if config.plan.volume is not None:
        # `gate plan` refused a name that is no target (harness/cli/plan_cmd.py)
        return next((t for t in targets if t.name == config.plan.volume), None)
    kv = config.gates.g3.evidence.kv_volume
    if kv is not None:
        same = [t for t in targets if (kv.mount is not None and t.mount == kv.mount)
                or (kv.device is not None and t.device == kv.device)]
        if len(same) == 1:
            return same[0]
    return targets[0] if len(targets) == 1 else None


def serving_key(layout: str, tier: int) -> str:
    """G2's host-fact key of a serving cell (gates/g2_baseline: `serving prefill <cell>`)."""
    return f"serving prefill {layout}-c{tier}"


def _fio_keys(volume: FioTarget | None) -> list[str]:
    return [f"fio {volume.name} seq-read", f"fio {volume.name} seq-write"] if volume else []


def _cells(config: SiteConfig, tiers: Sequence[int]) -> list[str]:
    served = config.gates.g2.serving.tiers if config.gates.g2.serving else []
    every = sorted({*tiers, *config.gates.g3.tiers, *served})
    return [serving_key(layout.name, tier) for layout in config.layouts for tier in every]


def fact_keys(config: SiteConfig, tiers: Sequence[int]) -> list[str]:
    """The host-fact keys `from_facts` reads, for campaign_facts(store, campaign, GATE,
    keys): the volume's fio figures, gdsio's, and G2's serving cells at `tiers` and the
    tiers G2 and G3 run."""
    return [*_fio_keys(volume_target(config)), GDSIO_KEY, *_cells(config, tiers)]


def _serving(host: str, fact: Fact, speed: float | None) -> Serving | None:
    value = fact.value
    if not isinstance(value, dict):
        return None
    ttfts, thrs = value.get("ttft_p50_s"), value.get("throughput_tps")
    if not (isinstance(ttfts, list) and isinstance(thrs, list) and ttfts and thrs):
        return None
    try:
        ttft = statistics.median(float(x) for x in ttfts)
        thr = statistics.median(float(x) for x in thrs)
    except (TypeError, ValueError):
        return None
    if not (ttft > 0 and thr > 0):  # nan (nothing completed) or a broken phase
        return None
    scale = speed if fact.simulated and speed else 1.0
    return Serving(host, fact.run, ttft * scale, thr / scale, fact.simulated,
                   scale if scale != 1.0 else None)


def from_facts(config: SiteConfig, facts: Facts, tiers: Sequence[int]) -> G2Measured:
    """G2's figures for the config's campaign out of the latest facts each host has
    (`facts`: what campaign_facts returned for `fact_keys(config, tiers)`)."""
    volume = volume_target(config)
    notes: list[str] = []
    if volume is None and config.gates.g2.fio:
        notes.append("which gates.g2.fio target is the accelerator's volume? set "
                     "plan.volume: its fio figures are not compared")
    fio = _fio_keys(volume)
    serving: dict[str, Serving] = {}
    for key in _cells(config, tiers):
        for host, fact in facts.get(key, {}).items():
            found = _serving(host, fact, sim_speed(config))
            if found is None:
                notes.append(f"G2 run {fact.run}'s {key!r} on {host} has no usable TTFT "
                             "p50 and throughput: not used")
            else:
                serving[key.removeprefix("serving prefill ")] = found
    return G2Measured(
        campaign=config.campaign.name, volume=volume,
        seq_read=facts.get(fio[0], {}) if fio else {},
        seq_write=facts.get(fio[1], {}) if fio else {},
        gdsio=facts.get(GDSIO_KEY, {}), serving=serving, notes=tuple(notes))


def worst(facts: Mapping[str, Fact], hosts: Sequence[str]) -> tuple[str, Fact] | None:
    """The host with the lowest figure among the layout's hosts (all hosts that measured
    it when none of the layout's did, as for a target on the storage hosts), and its fact;
    None: no usable figure."""
    usable = {h: f for h, f in facts.items()
              if isinstance(f.value, int | float) and not isinstance(f.value, bool)
              and f.value > 0}
    mine = {h: f for h, f in usable.items() if h in hosts} or usable
    if not mine:
        return None
    host = min(mine, key=lambda h: float(mine[h].value))
    return host, mine[host]


def _worst(facts: Mapping[str, Fact], hosts: Sequence[str], scale: float,
           what: str) -> Sourced:
    """`worst` in bytes / s, with where it came from."""
    found = worst(facts, hosts)
    if found is None:
        return Sourced(None)
    host, fact = found
    mark = ", simulated" if fact.simulated else ""
    return Sourced(float(fact.value) * scale, f"{what}, {host}, G2 run {fact.run}{mark}")


def measured_for(hosts: Sequence[str], g2: G2Measured) -> Measured:
    """G2's figures for a layout on `hosts` (none: a what-if layout), per host: the worst
    of its hosts."""
    name = g2.volume.name if g2.volume else ""
    return Measured(
        seq_read=_worst(g2.seq_read, hosts, 1e6, f"fio {name} seq-read"),
        seq_write=_worst(g2.seq_write, hosts, 1e6, f"fio {name} seq-write"),
        gds_read=_worst(g2.gdsio, hosts, 2**30, "gdsio read"))
