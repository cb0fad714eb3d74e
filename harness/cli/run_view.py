"""A stored run as the status commands show it: its row as a dict, its marks, times in
ISO 8601 for --json. Shared by `gate status` and `gate runs`."""

from __future__ import annotations

import datetime as dt
from typing import Any


def shown(token: str) -> str:
    """A verdict as the tables print it; RECORDED (a bench / import: nothing decided) is
    not a verdict, so it is written in lower case."""
    from harness.verdict import RECORDED

    return token.lower() if token == RECORDED else token


def when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else ""


def when_short(t: float | None, now: float | None = None) -> str:
    """A time for a narrow column: "12-05 09:39" this year, "2025-12-05" another (the
    whole time is in --json)."""
    if not t:
        return ""
    at = dt.datetime.fromtimestamp(t)
    this_year = dt.datetime.fromtimestamp(now).year if now else dt.datetime.now().year
    return at.strftime("%m-%d %H:%M") if at.year == this_year else at.strftime("%Y-%m-%d")


def iso(t: float | str | None) -> str | None:
    """An epoch time as ISO 8601 with its UTC offset, for --json (a float of seconds
    means nothing to a reader or a spreadsheet)."""
    if not isinstance(t, int | float):
        return t
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds")


def number(text: object) -> object:
    """A stored text that is one number, as that number (--json: numbers as numbers);
    anything else unchanged."""
    if not isinstance(text, str):
        return text
    try:
        value = float(text)
    except ValueError:
        return text
    if value != value or value in (float("inf"), float("-inf")):
        return text  # NaN / inf are not JSON
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() \
        else value


def times(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {**d, **{k: iso(d.get(k)) for k in keys}}


def run_dict(store: Any, row: Any) -> dict[str, Any]:
    from harness.store import runs as store_runs

    return {
        # uid: the run in every store (sync, packs); revision: of its measured content
        "id": row.id, "uid": row.uid, "revision": row.revision,
        "kind": row.kind, "gate": row.gate, "status": row.status,
        "verdict": row.verdict, "effective_verdict": store_runs.effective_verdict(store, row),
        "reason": row.reason, "partial": row.partial, "checks_selected": row.checks_selected,
        "checks_total": row.checks_total, "forced": row.forced, "simulated": row.simulated,
        "needs_signoff": row.needs_signoff, "trigger": row.trigger, "operator": row.operator,
        "started_at": row.started_at, "finished_at": row.finished_at,
        "harness_version": row.harness_version, "config_hash": row.config_hash,
        "suite": row.suite or None, "process": store_runs.liveness(row) or None,
    }


def marks(d: dict[str, Any]) -> str:
    words = [m for m, on in (("FORCED", d["forced"]), ("SIMULATED", d["simulated"]),
                             ("PARTIAL", d["partial"]), ("custom suite", d.get("suite")))
             if on]
    if d.get("process") == "gone":
        words.append("process gone")
    if d["needs_signoff"] and d["effective_verdict"] == "PASS":
        words.append("signed")
    elif d["needs_signoff"]:
        words.append("needs sign-off")
    return ", ".join(words)


def status_word(d: dict[str, Any]) -> str:
    """RUNNING with its process gone is stale: say so where the status is read."""
    return "RUNNING (stale)" if d.get("process") == "gone" else str(d["status"])
