"""A stored check's words in the report's language: its name from the catalogue, and its
expected / measured / message shown as stored when no reason code says them.

The gate suites record a check's words as reason codes beside the English
(harness/reasons.py, `CheckRecorder.expect/measure/explain`); the report says those
(harness/report/reasons.py). A row without one (a run stored before codes, a custom
`--suite` that records none, a code this harness does not know) is not parsed back out of
its English: it is shown as stored, and a report in another language marks it as such
(`checkwords.as_stored`), so a reader knows those words were never translated.
"""

from __future__ import annotations

from harness.report.i18n import Translator

EMPTY = "—"  # what the report shows for a check with no words at all


def name(t: Translator, function: str) -> str:
    """The check's name for people, translated when the catalogue has it."""
    key = f"checkwords.name.{function.split('[', 1)[0]}"
    return t(key) if key in t.messages else function


def param(t: Translator, value: str) -> str:
    """A check's parameter (`hardware` of `test_criterion[hardware]`) in the report's
    language where the catalogue names it; host, layout and tier stay as they are."""
    key = f"checkwords.param.{value}"
    return t(key) if key in t.messages else value


def as_stored(t: Translator, text: str) -> str:
    """Words shown as the run stored them: marked in a report that is not in English (the
    harness stores English), never in an English one, nor where there are none."""
    if t.lang == "en" or not text.strip() or text == EMPTY:
        return text
    return t("checkwords.as_stored", {"text": text})
