"""G3's and G4's decision settings in one place: what each one is, its default, its
bound, and which way is weaker.

The bounds themselves are enforced by the config models (a value past a bound is refused
at load, exit 4); this module reads them from there, so the numbers exist once. It answers
one question for the run, `gate runs show` and the report's first page: which decision
settings differ from the defaults, and does any difference weaken the test? A weakened
G3 result needs a reviewer's sign-off before it counts as PASS; so does G4's
(G4_SETTINGS: its soak's length and criteria, harness/g4/plan.py).

It works on the raw config dict (a run's stored `config_json` too), so a run stored by
an older harness is still described, not re-validated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from harness.config.knobs import undocumented
from harness.config.models import (
    CRITERIA,
    G3,
    G4,
    Evidence,
    G3Thresholds,
    G4Criteria,
    LoadHealth,
    Repetitions,
    parse_duration,
    span,
)

Weaker = Literal["lower", "higher"]


@dataclass(frozen=True)
class Setting:
    """One numeric decision setting: where it lives and which direction weakens the test
    (None: a change is shown but weakens nothing, e.g. more bootstrap resamples)."""

    path: tuple[str, ...]
    model: type[BaseModel]
    weaker: Weaker | None
    why: str
    seconds: bool = False  # a duration: shown as "72h", read from a number or "72h"

    @property
    def key(self) -> str:
        return ".".join(self.path)

    @property
    def field(self) -> FieldInfo:
        return self.model.model_fields[self.path[-1]]

    @property
    def default(self) -> float:
        value = self.field.default
        assert isinstance(value, int | float)
        return float(value)

    def show(self, value: float) -> str:
        return span(value) if self.seconds else _num(value)

    def value(self, raw: Mapping[str, Any]) -> float | None:
        """The setting's number in a config dict (None: absent, or not a number)."""
        value = _get(raw, self.path)
        if self.seconds and isinstance(value, str):
            try:
                value = parse_duration(value)
            except ValueError:
                return None
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        return float(value)

    def bound(self) -> str:
        """The limit as the model enforces it, for messages (e.g. '>= 0.25')."""
        parts = []
        for meta in self.field.metadata:
            for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                if getattr(meta, attr, None) is not None:
                    parts.append(f"{sign} {getattr(meta, attr):g}")
        return " and ".join(parts)


_G3 = ("gates", "g3")
_HEALTH = ("load", "health")
SETTINGS: tuple[Setting, ...] = (
    Setting((*_G3, "thresholds", "ttft_p50_drop"), G3Thresholds, "lower",
            "TTFT p50 must drop at least this much (the contract's floor)"),
    Setting((*_G3, "thresholds", "throughput_gain"), G3Thresholds, "lower",
            "throughput must rise at least this much (the contract's floor)"),
    Setting((*_G3, "thresholds", "band_top"), G3Thresholds, "higher",
            "a gain above this needs a reviewer: a broken baseline inflates gains"),
    Setting((*_G3, "confidence"), G3, "lower", "confidence of the decision's intervals"),
    Setting((*_G3, "repetitions", "min"), Repetitions, "lower",
            "ABBA pairs before the first look"),
    Setting((*_G3, "repetitions", "max"), Repetitions, None,
            "ABBA pairs at most (alpha spending keeps the error rate)"),
    Setting((*_G3, "bootstrap"), G3, None, "bootstrap resamples per interval"),
    Setting((*_G3, "seed"), G3, None, "ABBA order and bootstrap seed"),
    Setting((*_G3, "evidence", "max_failed_share"), Evidence, "higher",
            "failed requests a phase may have (failed baseline requests inflate the gain)"),
    Setting((*_G3, "evidence", "min_external_hit_share"), Evidence, "lower",
            "share of prompt tokens the accelerated arm must read from the tier"),
    Setting((*_G3, "evidence", "max_local_hit_share"), Evidence, "higher",
            "GPU prefix-cache hits allowed after a cold restart"),
    Setting((*_G3, "evidence", "max_token_disagreement"), Evidence, "higher",
            "requests whose server token count may disagree with the fixed length"),
    Setting((*_G3, "evidence", "kv_compression"), Evidence, "higher",
            "how much smaller the accelerator stores KV (its devices must read half the "
            "cold KV bytes divided by this)"),
    # A looser client-health bound lets a starved load generator decide a cell.
    Setting((*_HEALTH, "max_loop_lag_p99_ms"), LoadHealth, "higher",
            "event-loop lag (p99) the load generator may have"),
    Setting((*_HEALTH, "late_after_ms"), LoadHealth, "higher",
            "how late a send may be before it counts as late"),
    Setting((*_HEALTH, "max_late_share"), LoadHealth, "higher",
            "share of sends that may be late"),
    Setting((*_HEALTH, "max_process_cpu"), LoadHealth, "higher",
            "CPU the load generator's process may use (share of a core)"),
    Setting((*_HEALTH, "max_host_cpu"), LoadHealth, "higher",
            "busy share of the client host's cores"),
    Setting((*_HEALTH, "max_sim_lag_share"), LoadHealth, "higher",
            "how far a simulated engine may fall behind its modelled schedule"),
    Setting((*_HEALTH, "max_client_delay_share"), LoadHealth, "higher",
            "the load generator's mean delay as a share of the TTFT p50 it measures"),
    Setting((*_HEALTH, "max_client_tail_share"), LoadHealth, "higher",
            "the load generator's p99 delay as a share of the TTFT p50 it measures"),
    Setting((*_HEALTH, "max_rate_shortfall"), LoadHealth, "higher",
            "how far an open loop's send rate may fall short of its target"),
)

# G4's soak: a shorter one claims less than the 72 h G4 promises (a demo or a test may run
# one; its PASS is signed like any weakened one), and each criterion looser than its
# default lets more through. The window and the baseline shape the fit but weaken nothing
# on their own (the model refuses a soak with too few windows to fit a trend).
_G4 = ("gates", "g4")
_G4C = (*_G4, "criteria")
G4_SETTINGS: tuple[Setting, ...] = (
    Setting((*_G4, "duration"), G4, "lower",
            "how long the accelerated stack is soaked under load (G4 promises 72 h)",
            seconds=True),
    Setting((*_G4, "window"), G4, None, "the length of one judged window", seconds=True),
    Setting((*_G4, "baseline"), G4, None,
            "the first part of the soak, the level the drifts are shares of", seconds=True),
    Setting((*_G4C, "max_error_rate"), G4Criteria, "higher",
            "share of a window's requests that may fail"),
    Setting((*_G4C, "max_ttft_drift_per_24h"), G4Criteria, "higher",
            "TTFT p50 growth per 24 h (its interval's upper end)"),
    Setting((*_G4C, "max_throughput_drift_per_24h"), G4Criteria, "higher",
            "throughput fall per 24 h (its interval's lower end, negated)"),
    Setting((*_G4C, "max_memory_growth_per_24h"), G4Criteria, "higher",
            "engine memory growth per 24 h (its interval's upper end)"),
    Setting((*_G4C, "max_restarts"), G4Criteria, "higher", "engine restarts over the soak"),
    Setting((*_G4C, "min_engaged_share"), G4Criteria, "lower",
            "each window's tier hits and device reads, as a share of the baseline's"),
    Setting((*_G4C, "min_device_share"), G4Criteria, "lower",
            "device bytes a window's tier hits must be backed by, as a share of the KV "
            "they stand for"),
    Setting((*_G4C, "confidence"), G4Criteria, "lower", "confidence of the drifts' intervals"),
)


@dataclass(frozen=True)
class Deviation:
    """A decision setting that is not the default, and whether that weakens the test."""

    key: str
    value: str
    default: str
    weakened: bool
    why: str

    def line(self) -> str:
        mark = " (weaker: needs a reviewer's sign-off)" if self.weakened else ""
        return f"{self.key} = {self.value} (default {self.default}){mark}"


def _get(raw: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = raw
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _num(x: float) -> str:
    return str(int(x)) if x.is_integer() else f"{x:g}"


def _numeric(raw: Mapping[str, Any], settings: Sequence[Setting]) -> list[Deviation]:
    """Each of `settings` whose number in `raw` is not its default."""
    out = []
    for s in settings:
        value = s.value(raw)
        if value is None or value == s.default:
            continue
        weakened = (s.weaker == "lower" and value < s.default) or \
                   (s.weaker == "higher" and value > s.default)
        out.append(Deviation(s.key, s.show(value), s.show(s.default), weakened, s.why))
    return out


def deviations(raw: Mapping[str, Any]) -> list[Deviation]:
    """Every G3 decision setting of a config (dict form) that differs from its default."""
    out = _numeric(raw, SETTINGS)
    out += _drop_caches(raw) + _criteria(raw) + _differs_by(raw)
    if _get(raw, (*_G3, "engine_process_check")) is False:
        out.append(Deviation("gates.g3.engine_process_check", "false", "true", True,
                             "the engines' argv and environment are not compared"))
    if _get(raw, (*_G3, "evidence", "allow_storage_evidence")) is True:
        out.append(Deviation("gates.g3.evidence.allow_storage_evidence", "true", "false",
                             True, "storage read bandwidth may stand in for an engine "
                             "counter that proves the tier was read"))
    return out


def _drop_caches(raw: Mapping[str, Any]) -> list[Deviation]:
    """Without a page-cache drop a cold read may come from RAM and inflate the gain: an
    empty list weakens the test at a real site (a simulated lab has no page cache in front
    of its tier); a shorter list is shown."""
    groups = _get(raw, (*_G3, "drop_caches_on"))
    if not isinstance(groups, list):
        return []
    default = list(G3.model_fields["drop_caches_on"].get_default(call_default_factory=True))
    missing = [g for g in default if g not in groups]
    if not missing:
        return []
    reason = str(_get(raw, (*_G3, "drop_caches_reason")) or "")
    simulated = bool(raw.get("simulated"))
    if simulated and not groups:
        why = "simulated hosts: no page cache in front of the tier"
    else:
        why = f"page cache not dropped on {', '.join(missing)}" + (f": {reason}" if reason
                                                                  else "")
    return [Deviation(".".join((*_G3, "drop_caches_on")), "[" + ", ".join(groups) + "]",
                      "[" + ", ".join(default) + "]", not groups and not simulated, why)]


def _criteria(raw: Mapping[str, Any]) -> list[Deviation]:
    chosen = _get(raw, (*_G3, "criteria"))
    if not isinstance(chosen, Mapping):
        return []
    out = []
    for layout, names in chosen.items():
        names = list(names or [])
        dropped = [c for c in CRITERIA if c not in names]
        if dropped:
            out.append(Deviation(f"gates.g3.criteria.{layout}", ", ".join(names),
                                 ", ".join(CRITERIA), True,
                                 f"{layout} is not judged on {', '.join(dropped)}"))
    return out


DIFFERS_BY = "arms.accelerated.differs_by"


def _differs_by(raw: Mapping[str, Any]) -> list[Deviation]:
    """What the arms may differ in is a decision: a pattern outside the accelerator's
    documented knobs (harness/config/knobs.py) lets an undocumented difference through,
    so the result needs a reviewer's sign-off."""
    patterns = _get(raw, ("arms", "accelerated", "differs_by"))
    if not isinstance(patterns, list):
        return []
    engine = raw.get("engine")
    other = undocumented([str(p) for p in patterns],
                         engine if isinstance(engine, str) else None,
                         bool(raw.get("simulated")))
    if not other:
        return []
    return [Deviation(DIFFERS_BY, ", ".join(other), "the accelerator's documented knobs",
                      True, "the arms may differ in what the accelerator is not documented "
                      "to change: " + ", ".join(other))]


def weakened(raw: Mapping[str, Any]) -> list[Deviation]:
    return [d for d in deviations(raw) if d.weakened]


def g4_deviations(raw: Mapping[str, Any]) -> list[Deviation]:
    """Every G4 setting of a config (dict form) that differs from its default; each
    hardware source the site declares it cannot read weakens G4."""
    out = _numeric(raw, G4_SETTINGS)
    declared = _get(raw, (*_G4, "unverifiable"))
    for source, why in sorted(declared.items()) if isinstance(declared, dict) else ():
        out.append(Deviation(f"gates.g4.unverifiable.{source}", "declared", "read", True,
                             f"the hosts' {source} errors are not read during the soak: "
                             f"{why}"))
    return out


def g4_weakened(raw: Mapping[str, Any]) -> list[Deviation]:
    return [d for d in g4_deviations(raw) if d.weakened]


def criteria_for(criteria: Mapping[str, Sequence[str]], layout: str) -> tuple[str, ...]:
    """The criteria that decide a layout's cells (both unless the config names fewer)."""
    chosen = criteria.get(layout)
    return tuple(c for c in CRITERIA if chosen is None or c in chosen)


WEAKENED_REASON = "weaker decision settings: needs sign-off"
