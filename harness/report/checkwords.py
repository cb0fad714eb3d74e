"""The words of a stored check (its name, expected and measured) in the report's language.

The gate suites record these as English text (gates/g3_main/test_g3.py `check.expect`);
a Chinese report showed them untranslated. For the checks the report knows, the values
are read back out of that text and said again from the catalogue (`checkwords.*`); an
arm-by-arm value (`{'baseline': [8], 'accelerated': [8]}`) reads "baseline 8; accelerated
8". Text the report does not recognise is shown as stored.
"""

from __future__ import annotations

import ast
import re

from harness.report.i18n import Translator

# check function -> (pattern of its expected text, catalogue key)
_EXPECTED: dict[str, tuple[re.Pattern[str], str]] = {
    "test_arms_serve_the_same_model": (re.compile(
        r"^both arms serve (?P<model>.+) with the same max_model_len and engine version$"),
        "checkwords.same_model"),
    "test_arms_match_the_declared_layout": (re.compile(
        r"^tp=(?P<tp>\d+), (?P<n>\d+) instance\(s\) on both arms$"), "checkwords.layout"),
    "test_arms_differ_only_by_the_accelerator": (re.compile(
        r"^the engines' argv, environment and reported config are equal, except: "
        r"(?P<allowed>.+)$"), "checkwords.differ_only"),
    "test_accelerated_arm_exposes_external_cache": (re.compile(
        r"^(?P<counters>.+) on every accelerated instance$"), "checkwords.exposes"),
}
_MEASURED = {
    "present": "checkwords.present", "absent": "checkwords.absent",
    "absent; storage-side evidence allowed": "checkwords.absent_storage_ok",
}
_EQUAL_BUT = re.compile(r"^arms equal but for allowed (?P<keys>.+)$")


def name(t: Translator, function: str) -> str:
    """The check's name for people, translated when the catalogue has it."""
    key = f"checkwords.name.{function.split('[', 1)[0]}"
    return t(key) if key in t.messages else function


def expected(t: Translator, function: str, text: str) -> str:
    found = _EXPECTED.get(function.split("[", 1)[0])
    m = found[0].match(text) if found else None
    return t(found[1], m.groupdict()) if found and m else text


def measured(t: Translator, text: str) -> str:
    if text in _MEASURED:
        return t(_MEASURED[text])
    m = _EQUAL_BUT.match(text)
    if m:
        return t("checkwords.equal_but", m.groupdict())
    return _per_arm(t, text) or text


def _per_arm(t: Translator, text: str) -> str | None:
    """`{'baseline': [8], 'accelerated': [8]}` -> "baseline 8; accelerated 8"."""
    if not (text.startswith("{'baseline'") or text.startswith("{'accelerated'")):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    parts = []
    for arm, v in value.items():
        shown = ", ".join(str(x) for x in v) if isinstance(v, list) else str(v)
        label = t(f"arm.{arm}") if f"arm.{arm}" in t.messages else str(arm)
        parts.append(f"{label} {shown}")
    return "; ".join(parts)
