"""Modelled times for a simulated run.

The simulator divides every modelled duration by its `--speed` (docs/sim.md "The speed
factor"): a TTFT of 0.043 s at speed 30 is 1.29 s of the profile's model, and a measured
throughput is `speed` times the modelled one. A reader compares the model's numbers, so
where a simulated run's times are shown the report adds them in modelled units.

The speed is read from what the run recorded of its engines: the identity G3 reads after
each start (host_fact `engine identity ...`, flat key `server:gate_sim.speed`), else the
model card (`engine ...`, card.gate_sim.speed), else the arms' start commands in the run's
config (`--speed X`: G2's serving baseline records no engine facts). One speed for the
whole run or none: engines at different speeds have no single modelled scale.

The same holds for the bytes the simulated KV tier accounts in its diskstats file: it
reads the modelled bytes in wall time, so a storage rate is `speed` times the modelled
one. The tier's modelled bandwidth itself is what each engine's model card says
(card.gate_sim.tier_read_gbps, one engine alone); a run whose engines did not say it has
none, and nothing is compared with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from harness.report import fmt
from harness.report.frames import RunFrames
from harness.report.i18n import Translator

FLAT_KEY = "server:gate_sim.speed"


def _float(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def _from_fact(value: Any) -> float | None:
    if not isinstance(value, Mapping):
        return None
    facts = value.get("facts")
    if isinstance(facts, Mapping) and FLAT_KEY in facts:
        return _float(facts[FLAT_KEY])
    card = value.get("card")
    sim = card.get("gate_sim") if isinstance(card, Mapping) else None
    return _float(sim.get("speed")) if isinstance(sim, Mapping) else None


def _from_argv(argv: Any) -> float | None:
    if not isinstance(argv, Sequence) or isinstance(argv, str):
        return None
    words = [str(w) for w in argv]
    for i, w in enumerate(words):
        if w == "--speed" and i + 1 < len(words):
            return _float(words[i + 1])
        if w.startswith("--speed="):
            return _float(w.split("=", 1)[1])
    return None


def _from_config(config: Mapping[str, Any]) -> set[float]:
    found: set[float] = set()
    arms = config.get("arms")
    if not isinstance(arms, Mapping):
        return found
    for arm in arms.values():
        start = arm.get("start") if isinstance(arm, Mapping) else None
        speed = _from_argv(start.get("command")) if isinstance(start, Mapping) else None
        if speed is not None:
            found.add(speed)
    return found


def speed(frames: RunFrames) -> float | None:
    """The run's simulator speed factor, or None (not simulated, unknown, or mixed)."""
    run = frames.run
    return speed_of(run.simulated, frames.facts, run.config_json)


def speed_of(simulated: bool, facts: pd.DataFrame,
             config: Mapping[str, Any]) -> float | None:
    """`speed` from its parts: the run's flag, host facts (key, value), stored config."""
    if not simulated:
        return None
    found: set[float] = set()
    if not facts.empty:
        for row in facts.itertuples(index=False):
            if str(row.key).startswith("engine "):
                s = _from_fact(row.value)
                if s is not None:
                    found.add(s)
    if not found:
        found = _from_config(config)
    return next(iter(found)) if len(found) == 1 else None


def seconds(value: float | None, factor: float | None, t: Translator) -> str:
    """"0.043 s" and, at a known speed, a second line "model 1.290" (the unit is the line
    above's)."""
    shown = fmt.seconds(value)
    if factor is None or value is None or not math.isfinite(value):
        return shown
    return shown + "\n" + t("sim.model", {"value": fmt.seconds(value * factor)
                                           .removesuffix(" s")})


def rate(value: float | None, factor: float | None, t: Translator) -> str:
    """A measured throughput and, at a known speed, the modelled one (divided by it; its
    unit is the line above's: "tok/s" twice widened the G3 cells table past the page)."""
    shown = fmt.rate(value)
    if factor is None or value is None or not math.isfinite(value):
        return shown
    return shown + "\n" + t("sim.model", {"value": fmt.rate(value / factor, "").strip()})


def gbps(value: float | None, factor: float | None) -> str:
    """A storage rate: as measured, or in the model's GB/s at a known speed (the
    simulated tier's bytes in wall time, divided by the speed)."""
    if value is None or factor is None or not math.isfinite(value):
        return fmt.gbps(value)
    return fmt.gbps(value / factor)


def _engine_tier(value: Any) -> float | None:
    card = value.get("card") if isinstance(value, Mapping) else None
    sim = card.get("gate_sim") if isinstance(card, Mapping) else None
    return _float(sim.get("tier_read_gbps")) if isinstance(sim, Mapping) else None


def tier_gbps(facts: pd.DataFrame, arm: str = "accelerated") -> dict[str, float]:
    """layout -> the simulated tier's modelled read bandwidth on one host, GB/s: the sum
    over the arm's engines of the layout on a host (they read through the same tier),
    the lowest host's; a layout any of whose engines did not say it is left out."""
    if facts.empty:
        return {}
    per_host: dict[str, dict[str, dict[str, float | None]]] = {}
    prefix = f"engine {arm} "
    for row in facts.itertuples(index=False):
        key = str(row.key)
        if not key.startswith(prefix):
            continue
        layout, _, instance = key[len(prefix):].rpartition("#")
        if layout and instance.isdigit():  # the latest reading of an engine stands
            per_host.setdefault(layout, {}).setdefault(str(row.host), {})[instance] = (
                _engine_tier(row.value))
    found: dict[str, float] = {}
    for layout, hosts in per_host.items():
        sums = [sum(v for v in engines.values() if v is not None)
                if all(v is not None for v in engines.values()) else None
                for engines in hosts.values()]
        if sums and all(x is not None for x in sums):
            found[layout] = min(x for x in sums if x is not None)
    return found


def note(factor: float | None, t: Translator) -> list[str]:
    """The section note that says what the "model" lines are."""
    return [t("sim.note", {"speed": f"{factor:g}"})] if factor is not None else []


def tier_note(facts: pd.DataFrame, factor: float | None, t: Translator) -> list[str]:
    """A simulated run's storage part: what its tier is modelled at on one host (from the
    run's host facts), and that G2's fio read another device (this machine's disk)."""
    if factor is None:
        return []
    tiers = tier_gbps(facts)
    if not tiers:
        return [t("sim.tier_unknown")]
    listed = t("reason.sep").join(t("sim.tier_layout", {"layout": layout,
                                                          "gbps": fmt.gbps(gbps)})
                                  for layout, gbps in sorted(tiers.items()))
    return [t("sim.tier", {"tiers": listed})]
