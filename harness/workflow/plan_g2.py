"""What G2 measured that `gate plan` holds its requirements against, read from the store.

Why here: the planner (harness.plan) does no I/O, and G2's suite records its figures as
host facts with keys of its own (`fio <target> seq-read` in MB/s, `gdsio read GiB/s`,
`serving prefill <layout>-c<tier>` with each repetition's TTFT p50 and throughput); this
module knows those keys and turns them into the planner's bytes / s and tokens / s.
Read through harness.store.lookups, never SQL.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config.models import CommandAction, FioTarget, SiteConfig
from harness.plan import Measured, Sourced
from harness.store import Store
from harness.store.lookups import Fact, campaign_facts

GDSIO_KEY = "gdsio read GiB/s"


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


def read_g2(store: Store, config: SiteConfig, tiers: Sequence[int]) -> G2Measured:
    """The latest figures each host has from a G2 run of the config's campaign."""
    volume = volume_target(config)
    notes: list[str] = []
    if volume is None and config.gates.g2.fio:
        notes.append("which gates.g2.fio target is the accelerator's volume? set "
                     "plan.volume: its fio figures are not compared")
    fio_keys = [f"fio {volume.name} seq-read", f"fio {volume.name} seq-write"] if volume \
        else []
    cells = {serving_key(layout.name, tier): None for layout in config.layouts
             for tier in sorted({*tiers, *config.gates.g3.tiers,
                                 *(config.gates.g2.serving.tiers
                                   if config.gates.g2.serving else [])})}
    facts = campaign_facts(store, f"{config.site.name}/{config.campaign.name}", "G2",
                           [*fio_keys, GDSIO_KEY, *cells])
    serving: dict[str, Serving] = {}
    for key in cells:
        for host, fact in facts.get(key, {}).items():
            found = _serving(host, fact, sim_speed(config))
            if found is None:
                notes.append(f"G2 run {fact.run}'s {key!r} on {host} has no usable TTFT "
                             "p50 and throughput: not used")
            else:
                serving[key.removeprefix("serving prefill ")] = found
    return G2Measured(
        campaign=config.campaign.name, volume=volume,
        seq_read=facts.get(fio_keys[0], {}) if fio_keys else {},
        seq_write=facts.get(fio_keys[1], {}) if fio_keys else {},
        gdsio=facts.get(GDSIO_KEY, {}), serving=serving, notes=tuple(notes))


def _worst(facts: Mapping[str, Fact], hosts: Sequence[str], scale: float,
           what: str) -> Sourced:
    """The lowest figure among the layout's hosts (all hosts that measured it when none
    of the layout's did, as for a target on the storage hosts), in bytes / s."""
    usable = {h: f for h, f in facts.items()
              if isinstance(f.value, int | float) and not isinstance(f.value, bool)
              and f.value > 0}
    mine = {h: f for h, f in usable.items() if h in hosts} or usable
    if not mine:
        return Sourced(None)
    host = min(mine, key=lambda h: float(mine[h].value))
    fact = mine[host]
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
