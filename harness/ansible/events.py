"""ansible-runner event dicts -> AnsibleEvent rows, facts, and the first real failure.

Why pure functions: the event shapes are ansible-runner's, and what counts as a failure
(ignore_errors, unreachable vs failed) decides a gate's ERROR message; it is tested on
events captured from real runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

HOST_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_unreachable": "unreachable",
    "runner_on_skipped": "skipped",
}
FACT_ACTIONS = {"setup", "gather_facts", "ansible.builtin.setup", "ansible.builtin.gather_facts",
                "ansible.legacy.setup", "ansible.legacy.gather_facts"}


@dataclass(frozen=True)
class AnsibleEvent:
    """One task result on one host, as the store and the progress display want it."""

    host: str
    task: str
    action: str
    status: str  # ok | changed | failed | unreachable | skipped | ignored
    duration: float
    message: str
    counter: int = 0
    result: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    stdout: str = field(default="", compare=False, repr=False)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def message_of(res: Mapping[str, Any]) -> str:
    """What a human needs from a result: msg, else the command's stderr / stdout tail."""
    parts = [_text(res.get("msg")).strip()]
    for key in ("stderr", "module_stderr", "stdout", "module_stdout"):
        text = _text(res.get(key)).strip()
        if text and text not in parts[0]:
            parts.append(text[-1500:])
            break
    if res.get("rc") not in (None, 0) and "rc" not in parts[0]:
        parts.append(f"(rc {res['rc']})")
    return " ".join(p for p in parts if p)[:4000]


def parse_event(event: Mapping[str, Any]) -> AnsibleEvent | None:
    """An AnsibleEvent for a per-host task result; None for every other event kind."""
    kind = event.get("event", "")
    if kind not in HOST_EVENTS:
        return None
    data: Mapping[str, Any] = event.get("event_data") or {}
    res: Mapping[str, Any] = data.get("res") or {}
    status = HOST_EVENTS[kind]
    if status == "ok" and res.get("changed"):
        status = "changed"
    if status == "failed" and data.get("ignore_errors"):
        status = "ignored"
    try:
        duration = float(data.get("duration") or 0.0)
    except (TypeError, ValueError):
        duration = 0.0
    return AnsibleEvent(
        host=str(data.get("host") or data.get("remote_addr") or ""),
        task=str(data.get("task") or data.get("task_action") or ""),
        action=str(data.get("task_action") or ""),
        status=status,
        duration=duration,
        message=message_of(res) if status in ("failed", "unreachable", "ignored") else
        _text(res.get("msg"))[:2000],
        counter=int(event.get("counter") or 0),
        result=res,
        stdout=str(event.get("stdout") or ""),
    )


def facts_of(events: Iterable[AnsibleEvent]) -> dict[str, dict[str, Any]]:
    """host -> facts: the setup task's ansible_facts (named as `ansible_facts.X` in a
    playbook, without the ansible_ prefix), then every set_fact on top."""
    facts: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.status not in ("ok", "changed"):
            continue
        found = dict(ev.result.get("ansible_facts") or {})
        if ev.action in FACT_ACTIONS:  # setup reports ansible_system; playbooks see system
            found = {k.removeprefix("ansible_"): v for k, v in found.items()}
        for item in ev.result.get("results") or []:
            if isinstance(item, Mapping):
                found.update(item.get("ansible_facts") or {})
        if found:
            facts.setdefault(ev.host, {}).update(found)
    return facts


def failures(events: Iterable[AnsibleEvent]) -> list[AnsibleEvent]:
    """Events that fail the run (ignore_errors results excluded), unreachable first."""
    bad = [e for e in events if e.status in ("failed", "unreachable")]
    return sorted(bad, key=lambda e: (e.status != "unreachable", e.counter))
