"""`gates.g4`: G4's soak and the criteria its windows are judged on (docs/g4.md), beside
the other gates' sections (baseline.py is G2's, bom.py G1's)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from harness.config.base import Frozen

# G4's durations are seconds, written as a number or with one unit: the soak is "72h", its
# window "60s". One parser for every key that takes one (gates.g4.duration, window, ...).
DURATION_FORMS = "a number of seconds, or a number with a unit s, m, h or d: 90s, 5m, 1.5h, 3d"
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# A drift is fitted on at least this many windows after the baseline (harness/g4/trend.py).
MIN_TREND_WINDOWS = 3


def parse_duration(value: object) -> object:
    """A duration as seconds: "90s", "5m", "1.5h", "3d" (or "90": seconds); a number is
    passed on as seconds for the field's bounds to judge, as is anything else for its type
    to refuse. A string in no accepted form is a PydanticCustomError (a ValueError) that
    lists the forms; a boolean is one too (YAML's `yes` is not a duration)."""
    if isinstance(value, bool):
        raise PydanticCustomError("duration", "a duration ({forms})", {"forms": DURATION_FORMS})
    if isinstance(value, str):
        m = _DURATION.fullmatch(value.strip())
        if m is None:
            raise PydanticCustomError("duration", "a duration ({forms})",
                                      {"forms": DURATION_FORMS})
        return float(m[1]) * _UNIT_S[m[2]]
    return value


def span(seconds: float) -> str:
    """Seconds as short exact text parse_duration reads back: 259200 -> "72h", 5400 ->
    "90m", 120 -> "2m", 60 -> "60s", 2.5 -> "2.5s" (hours, not days: G4 promises "72 h";
    a minute is "60s", as the window's default is written)."""
    if seconds >= 3600 and (seconds / 3600).is_integer():
        return f"{int(seconds / 3600)}h"
    if seconds >= 120 and (seconds / 60).is_integer():
        return f"{int(seconds / 60)}m"
    return f"{seconds:g}s"


Seconds = Annotated[float, BeforeValidator(parse_duration)]
# What G4 reads of the hosts' hardware while it soaks (harness/g4/hardware.py).
HardwareSource = Literal["xid", "ecc", "nvme"]
HARDWARE_SOURCES: tuple[HardwareSource, ...] = ("xid", "ecc", "nvme")


class G4Criteria(Frozen):
    """What a soak's windows must show (harness/g4/criteria.py `Criteria`, same names and
    meanings; docs/g4.md "Criteria"). The defaults are the ones a reviewer signs; any
    looser (a max_* above, a min_* or the confidence below its default) is accepted but
    makes a G4 PASS need a reviewer's sign-off (harness/config/decision.py), stricter is
    always allowed."""

    # Failed share of each window's requests. 1 %: a serving stack that fails more than
    # one request in a hundred in any minute is not stable, whatever its averages say.
    max_error_rate: float = Field(default=0.01, ge=0, le=1)
    # TTFT p50's slope after the baseline, as a share of the baseline's level per 24 h: the
    # upper end of its interval. 10 %: a stack getting 30 % slower over 72 h is not stable.
    max_ttft_drift_per_24h: float = Field(default=0.10, ge=0)
    # Throughput's slope, same shape: the lower end of its interval, negated (a fall).
    max_throughput_drift_per_24h: float = Field(default=0.10, ge=0)
    # The engine's RSS slope, upper end. 2 % a day: a leak that grows the engine by a few
    # percent over the soak ends it out of memory within weeks.
    max_memory_growth_per_24h: float = Field(default=0.02, ge=0)
    # Engine restarts over the soak. 0: a restart loses the KV the tier holds and hides
    # whatever crashed; a soak that needed one is not a stable one.
    max_restarts: int = Field(default=0, ge=0)
    # Every window's external-tier hits and device reads, each at least this share of the
    # baseline's mean per window: a stack that fell back to recompute at hour 20 still
    # answers every request; only this shows the accelerator kept doing the work.
    min_engaged_share: float = Field(default=0.5, ge=0, le=1)
    # A window's device bytes / the KV bytes its tier hits stand for (hit tokens x KV bytes
    # per token): G3's 50 % rule, so a tier that reports hits it never read is caught.
    min_device_share: float = Field(default=0.5, ge=0, le=1)
    # Confidence of the drifts' intervals (each criterion holds the pessimistic end, so a
    # lower confidence narrows them and passes more): G3's default and floor.
    confidence: float = Field(default=0.95, ge=0.90, lt=1)


class G4(Frozen):
    """G4's soak: the accelerated arm of one layout under closed-loop load for `duration`,
    cut into windows and judged window by window (docs/g4.md). Durations are seconds or
    text with a unit ("72h", "60s"). A soak shorter than 72 h claims less than G4
    promises: it is allowed (a demo, a test) and needs a reviewer's sign-off on a PASS,
    as any criterion looser than its default does (harness/config/decision.py)."""

    # 72 h: what G4 promises. Three days under load cover daily cycles (log rotation,
    # cron jobs, the tier's own housekeeping) and give a slope of 1 % a day room to show.
    duration: Seconds = Field(default=72 * 3600.0, gt=0)
    # 60 s: long enough that a window at c=16 holds hundreds of requests (a stable p50 and
    # error share), short enough that one bad minute is not averaged away and a hard miss
    # stops the soak within a minute; 72 h make 4320 windows.
    window: Seconds = Field(default=60.0, gt=0)
    # The first hour: the level the drifts are shares of and the engaged rule compares
    # with (warm-up and the tier's first fill settle well within it); trends are fitted
    # on the windows after it.
    baseline: Seconds = Field(default=3600.0, gt=0)
    # Requests in flight (closed loop: each slot sends its next when its last ends). 16:
    # G3's highest tier by default, where the tier is read hardest.
    concurrency: int = Field(default=16, ge=1)
    # The soak's working set, documents asked in turn; None: enough for the concurrency
    # and over twice the GPU prefix cache the engine's /metrics reports (vLLM's
    # cache_config_info). Set it for an engine that does not say its cache size: a working
    # set the GPU holds whole never reaches the tier, and no window counts as engaged.
    documents: int | None = Field(default=None, ge=1)
    # Which layout's accelerated arm is soaked; None: the first of `layouts:`.
    layout: str | None = Field(default=None, min_length=1)
    # A hard criterion failing (errors, restarts, the accelerator not engaged) ends the
    # soak there as STOP-LOSS: the rest of 72 h could not turn it into a PASS.
    stop_early: bool = True
    criteria: G4Criteria = G4Criteria()
    optional: list[str] = Field(default_factory=list)
    # Hardware sources this site cannot read, each with why: `xid` (the GPU hosts' kernel
    # journal), `ecc` (nvidia-smi -q -x), `nvme` (nvme smart-log). A source declared here is
    # left out of the hardware criterion and named in it; one not declared and not readable
    # makes that criterion INCONCLUSIVE. Each entry weakens G4 (a reviewer's sign-off).
    unverifiable: dict[HardwareSource, str] = Field(default_factory=dict)

    @property
    def windows(self) -> int:
        """Whole windows in the soak (a last partial one is not judged)."""
        return math.floor(self.duration / self.window + 1e-9)

    @property
    def windows_in_baseline(self) -> int:
        """Windows whose middle falls in the baseline: the level drifts are shares of and
        the engaged rule compares with (harness/g4/trend.py, criteria.py)."""
        return min(self.windows, max(0, math.ceil(self.baseline / self.window - 0.5 - 1e-9)))

    @property
    def windows_after_baseline(self) -> int:
        """Windows whose middle is past the baseline: those a drift is fitted on
        (harness/g4/trend.py; fewer than 3 fit no trend)."""
        return self.windows - self.windows_in_baseline

    @model_validator(mode="after")
    def _room_for_a_trend(self) -> G4:
        if self.baseline >= self.duration:
            raise self._error(("duration", "baseline"), (
                f"a duration longer than the baseline (duration {span(self.duration)}, "
                f"baseline {span(self.baseline)}: the drifts are shares of the baseline's "
                f"level and fitted on the windows after it)"))
        if self.windows_in_baseline < 1:
            raise self._error(("window", "baseline"), (
                f"a window shorter than twice the baseline, so that one falls in it: the drifts "
                f"are shares of the level the baseline's windows measure (window "
                f"{span(self.window)}, baseline {span(self.baseline)})"))
        if self.windows_after_baseline < MIN_TREND_WINDOWS:
            raise self._error(("duration", "window", "baseline"), (
                f"at least {MIN_TREND_WINDOWS} windows after the baseline, or no trend can "
                f"be fitted: duration {span(self.duration)} after a baseline of "
                f"{span(self.baseline)} holds {self.windows_after_baseline} windows of "
                f"{span(self.window)} (lengthen the soak, or shorten the window or the "
                f"baseline)"))
        return self

    def _error(self, keys: tuple[str, ...], expected: str) -> ValidationError:
        """A cross-key problem placed on the first of `keys` the config set, so the
        message names a key the user wrote (and a `--set` of it is blamed for it)."""
        key = next((k for k in keys if k in self.model_fields_set), keys[0])
        return ValidationError.from_exception_data("G4", [InitErrorDetails(
            type=PydanticCustomError("g4_soak", "{expected}", {"expected": expected}),
            loc=(key,), input=span(getattr(self, key)))])
