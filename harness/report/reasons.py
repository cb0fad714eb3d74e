"""Reasons in the report's language: a stored reason code (harness.reasons) said from the
catalogue (`reason.<code>`), else the English text the run stored (runs made before
codes existed, or a code this harness does not know)."""

from __future__ import annotations

from typing import Any

from harness.reasons import Reason, from_json
from harness.report.i18n import Translator, placeholders

# Parameters whose values are words the catalogue translates.
_WORDS = {"arm": "arm", "criterion": "reason.criterion", "ended": "reason.soak_ended",
          "item": "words.item"}


def known(t: Translator, r: Reason) -> bool:
    """Every code in the reason (nested ones too) has a catalogue entry, given every
    parameter it says (a run stored when a code had other parameters is said as stored)."""
    key = f"reason.{r.code}"
    if key not in t.messages:
        return False
    given = {*r.params, *(("parts",) if r.parts else ())}
    if not placeholders(t.messages[key]) <= given:
        return False
    nested = [v for v in r.params.values() if isinstance(v, Reason)]
    return all(known(t, x) for x in (*nested, *r.parts))


def say(t: Translator, r: Reason) -> str:
    values: dict[str, object] = {}
    for k, v in r.params.items():
        if isinstance(v, Reason):
            values[k] = say(t, v)
        elif k in _WORDS and f"{_WORDS[k]}.{v}" in t.messages:
            values[k] = t(f"{_WORDS[k]}.{v}")
        else:
            values[k] = v
    if r.parts:
        values["parts"] = t("reason.sep").join(say(t, p) for p in r.parts)
    return t(f"reason.{r.code}", values) if values else t(f"reason.{r.code}")


def said(t: Translator, value: object) -> str | None:
    """The stored reason (JSON) in the report's language; None when there is none or it
    is not fully known."""
    r = from_json(value)
    return say(t, r) if r is not None and known(t, r) else None


def stored(t: Translator, value: object, fallback: str) -> str:
    """The stored reason (JSON) in the report's language; `fallback` (the stored English)
    when there is none or it is not fully known."""
    words = said(t, value)
    return fallback if words is None else words


def cell(t: Translator, row: Any) -> str:
    """A G3 cell's reason (its details.why), else its stored English."""
    details = row.details if isinstance(row.details, dict) else {}
    return stored(t, details.get("why"), str(row.reason or "—"))
