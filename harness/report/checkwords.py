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

from harness.report import factwords
from harness.report.i18n import Translator

# G2's fio jobs (harness/g2/fio.py), the end of a fio check's parameter
FIO_JOBS = ("seq-read", "seq-write", "rand-read", "lat-qd1")
EMPTY = "—"  # what the report shows for a check with no words at all


def name(t: Translator, function: str) -> str:
    """The check's name for people, translated when the catalogue has it."""
    key = f"checkwords.name.{function.split('[', 1)[0]}"
    return t(key) if key in t.messages else function


def param(t: Translator, value: str, host: str | None = None) -> str:
    """A check's parameter (`hardware` of `test_criterion[hardware]`) in the report's
    language where the catalogue names it; host, layout and tier stay as they are. A
    per-host check's `{host}-{item}` (`gpu1-gpu-link`, G2's `gpu1-local-disk-seq-read`)
    says its G1 item or fio job in words, the host and the site's target as written."""
    key = f"checkwords.param.{value}"
    if key in t.messages:
        return t(key)
    if not host or not value.startswith(f"{host}-"):
        return value
    rest = value[len(host) + 1:]
    job = next((j for j in FIO_JOBS if rest.endswith(f"-{j}")), None)
    if job is not None:
        rest = t("checkwords.target_job", {"target": rest.removesuffix(f"-{job}"),
                                           "job": factwords.fio_job(t, job)})
    else:
        rest = factwords.item(t, rest)
    return t("checkwords.host_item", {"host": host, "item": rest})


def as_stored(t: Translator, text: str) -> str:
    """Words shown as the run stored them: marked in a report that is not in English (the
    harness stores English), never in an English one, nor where there are none."""
    if t.lang == "en" or not text.strip() or text == EMPTY:
        return text
    return t("checkwords.as_stored", {"text": text})
