"""What G3 adds to page 1 besides its criteria: the decision settings that differ from
the defaults, what differed between the two arms' engines, and what a reviewer's sign-off
of the run accepts (or, unsigned, why its PASS is held back).

Settings come from the run's stored config (harness.config.decision.deviations); the
arms are compared again from the engines' identity facts the run recorded after start
(host_fact `engine identity {arm} {layout}#{instance}`, the first reading of each: the
preflight's) with the patterns of the run's own config, through the gate's own pure
comparison (harness.serving.identity.compare_arms). Nothing here re-decides a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.config.decision import DIFFERS_BY, WEAKENED_REASON, Deviation, deviations
from harness.report import fmt
from harness.report.frames import RunFrames, RunInfo
from harness.report.i18n import Translator
from harness.report.model import (
    ArmDifference,
    ArmsCheck,
    ArmsLayout,
    Finding,
    RunSettings,
    SettingChange,
)
from harness.report.redact import redact_overrides
from harness.report.sections.base import weakened_settings
from harness.serving.identity import ArmComparison, Difference, compare_arms
from harness.verdict import SIGNOFF_REASON

ARMS = ("baseline", "accelerated")
IDENTITY = re.compile(r"^engine identity (baseline|accelerated) (.+)#(\d+)$")
SHOWN = 30  # a value longer than this is shortened in the middle (both ends tell)


def _g3(config: Mapping[str, Any]) -> Mapping[str, Any]:
    g3 = ((config or {}).get("gates") or {}).get("g3") or {}
    return g3 if isinstance(g3, Mapping) else {}


# -- decision settings -------------------------------------------------------------------
def _why(d: Deviation, config: Mapping[str, Any], t: Translator) -> str:
    """The setting's meaning in the report's language (the harness's English otherwise)."""
    g3 = _g3(config)
    if d.key == "gates.g3.drop_caches_on":
        groups = [str(g) for g in g3.get("drop_caches_on") or []]
        if not groups and config.get("simulated"):
            return t("settings.why.drop_caches_sim")
        default = [x.strip() for x in d.default.strip("[]").split(",") if x.strip()]
        missing = ", ".join(g for g in default if g not in groups)
        reason = str(g3.get("drop_caches_reason") or "")
        return t("settings.why.drop_caches_reason" if reason else "settings.why.drop_caches",
                 {"groups": missing, "reason": reason})
    if d.key.startswith("gates.g3.criteria."):
        chosen = [x.strip() for x in d.value.split(",") if x.strip()]
        left = [c.strip() for c in d.default.split(",") if c.strip() not in chosen]
        names = [t(f"settings.criterion.{c}") if f"settings.criterion.{c}" in t.messages
                 else c for c in left]
        return t("settings.why.criteria", {"layout": d.key.rsplit(".", 1)[-1],
                                           "criteria": ", ".join(names)})
    if d.key == DIFFERS_BY:  # patterns outside the accelerator's documented knobs
        return t("settings.why.differs_by", {"patterns": d.value})
    key = f"settings.why.{d.key}"
    return t(key) if key in t.messages else d.why


def _default(d: Deviation, t: Translator) -> str:
    return t("settings.knobs") if d.key == DIFFERS_BY else d.default


def settings(run: RunInfo, t: Translator) -> RunSettings:
    """Every decision setting of the run's config off its default, weakened ones first."""
    devs = deviations(run.config_json)
    changes = [SettingChange(key=d.key, value=d.value, default=_default(d, t),
                             why=_why(d, run.config_json, t), weakened=d.weakened)
               for d in sorted(devs, key=lambda d: not d.weakened)]
    return RunSettings(run_id=run.id, gate=run.gate or "G3", changes=changes,
                       overrides=redact_overrides(run.overrides))


def weakened_text(run: RunInfo, t: Translator) -> str:
    """The weakened settings in one line: "gates.g3.confidence 0.9 instead of 0.95; ..."."""
    return weakened_settings(run, t)


# -- sign-off: what it accepts -----------------------------------------------------------
def accepts(run: RunInfo, t: Translator, *, short: bool = False) -> str:
    """What a reviewer's sign-off of this run accepts, in words ("" when nothing waits for
    one); `short` leaves out the values. Read off the run's stored reason, as the runner
    wrote it."""
    if not run.needs_signoff:
        return ""
    what = []
    if run.reason.startswith(SIGNOFF_REASON):
        top = (_g3(run.config_json).get("thresholds") or {}).get("band_top", 0.40)
        what.append(t("signoff.above_band_short") if short else
                    t("signoff.above_band", {"top": fmt.pct(_num(top))}))
    if WEAKENED_REASON in run.reason:
        what.append(t("signoff.weakened_short") if short else
                    t("signoff.weakened", {"settings": weakened_text(run, t) or "—"}))
    if not what:  # a reason this harness does not know: shown as stored
        what.append(run.reason or "—")
    return t("signoff.and").join(what)


def _num(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def weakened_finding(run: RunInfo, t: Translator) -> list[Finding]:
    """An unsigned weakened run: its cells and checks passed, so nothing else says why it
    is not a PASS."""
    if not run.needs_signoff or WEAKENED_REASON not in run.reason or run.effective == "PASS" \
            or run.status != "FINISHED":
        return []
    return [Finding(gate=run.gate or "G3", token="INCONCLUSIVE", text=t(
        "finding.g3_weakened", {"run": run.id, "settings": weakened_text(run, t) or "—"}))]


# -- arms ----------------------------------------------------------------------------------
def _short(value: str | None, t: Translator) -> str:
    if value is None:
        return t("arms.absent")
    text = value.replace("\n", "\\n")
    if len(text) <= SHOWN:
        return text
    head = SHOWN // 3
    return text[:head] + "…" + text[-(SHOWN - head - 1):]


def identities(frames: RunFrames) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """layout -> arm -> instance -> the first identity reading (the preflight's)."""
    out: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    facts = frames.facts
    if facts.empty:
        return out
    for row in facts.itertuples(index=False):
        m = IDENTITY.match(str(row.key))
        if m is None:
            continue
        value = row.value if isinstance(row.value, dict) else {}
        per = out.setdefault(m.group(2), {}).setdefault(m.group(1), {})
        per.setdefault(int(m.group(3)), value)
    return out


def _flat(reading: Mapping[str, Any]) -> dict[str, str]:
    facts = reading.get("facts")
    return {str(k): str(v) for k, v in facts.items()} if isinstance(facts, Mapping) else {}


def _rows(cmp: ArmComparison, t: Translator) -> list[ArmDifference]:
    """Allowed and blocking differences; one row per key when every instance differs
    alike, else one per instance."""
    shown = [d for d in cmp.differences if not d.ignored]
    by_key: dict[str, list[Difference]] = {}
    for d in shown:
        by_key.setdefault(d.key, []).append(d)
    out = []
    for key, diffs in by_key.items():
        same = len({(d.baseline, d.accelerated, d.allowed_by) for d in diffs}) == 1
        whole = same and (cmp.instances <= 1 or len(diffs) == cmp.instances)
        for d in diffs[:1] if whole else diffs:
            out.append(ArmDifference(instance=None if whole else d.instance, key=key,
                                     baseline=_short(d.baseline, t),
                                     accelerated=_short(d.accelerated, t),
                                     allowed_by=d.allowed_by or ""))
    out.sort(key=lambda r: (r.allowed_by != "", r.key, r.instance or 0))  # blocking first
    return out


def _layout(name: str, readings: Mapping[str, Mapping[int, Mapping[str, Any]]],
            patterns: Sequence[str], process_check: bool, t: Translator) -> ArmsLayout:
    missing = [a for a in ARMS if not readings.get(a)]
    if missing:
        return ArmsLayout(layouts=[name], token="NOT_RUN", notes=[
            t("arms.not_read", {"layout": name, "arm": t(f"arm.{a}")}) for a in missing])
    facts = {a: [_flat(readings[a][i]) for i in sorted(readings[a])] for a in ARMS}
    cmp = compare_arms(facts["baseline"], facts["accelerated"], patterns)
    notes = []
    if process_check:
        for arm in ARMS:
            for i in sorted(readings[arm]):
                problem = str(readings[arm][i].get("problem") or "")
                if problem:
                    notes.append(t("arms.problem", {"layout": name, "instance": i,
                                                    "arm": t(f"arm.{arm}"),
                                                    "problem": problem}))
    notes += [t("arms.unverified", {"layout": name, "instance": i}) for i in cmp.unverified]
    blocked = bool(cmp.blocking) or bool(notes)
    return ArmsLayout(layouts=[name], token="ERROR" if blocked else "PASS",
                      differences=_rows(cmp, t), notes=notes,
                      ignored=sorted({d.key for d in cmp.ignored}))


def arms(frames: RunFrames, t: Translator) -> ArmsCheck:
    run = frames.run
    config = run.config_json
    raw = (((config.get("arms") or {}).get("accelerated") or {}).get("differs_by") or [])
    patterns = [str(p) for p in raw]
    found = identities(frames)
    g3 = _g3(config)
    chosen = [str(x) for x in g3.get("layouts") or []]  # empty: G3 runs every layout
    names = [str(lay.get("name")) for lay in config.get("layouts") or []
             if isinstance(lay, Mapping) and lay.get("name")
             and (not chosen or str(lay.get("name")) in chosen)]
    names += sorted(n for n in found if n not in names)
    check = g3.get("engine_process_check", True) is not False
    layouts = [_layout(n, found.get(n, {}), patterns, check, t) for n in names] if found \
        else []
    return ArmsCheck(run_id=run.id, gate=run.gate or "G3", patterns=patterns,
                     layouts=_merged(layouts))


def _merged(layouts: list[ArmsLayout]) -> list[ArmsLayout]:
    """Layouts whose arms differed in exactly the same way share one group (the same
    engines on TP8 and TP4x2 usually do): page 1 stays short."""
    out: list[ArmsLayout] = []
    for lay in layouts:
        same = next((o for o in out if not lay.notes and not o.notes and o.token == lay.token
                     and o.differences == lay.differences), None)
        if same is None:
            out.append(lay)
            continue
        out[out.index(same)] = same.model_copy(update={
            "layouts": [*same.layouts, *lay.layouts],
            "ignored": sorted({*same.ignored, *lay.ignored})})
    return out
