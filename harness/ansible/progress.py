"""A rich progress line per task result, for stderr while a playbook runs.

Why separate: the CLI decides where progress goes (and -q silences it); run_playbook only
calls back with events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.ansible.events import AnsibleEvent

_STYLE = {"ok": "green", "changed": "yellow", "failed": "bold red", "unreachable": "bold red",
          "skipped": "dim", "ignored": "magenta"}


def progress_printer(console: Any) -> Callable[[AnsibleEvent], None]:
    """A callback printing `host  status  task  (duration)` lines on a rich Console."""
    from rich.markup import escape

    def show(ev: AnsibleEvent) -> None:
        style = _STYLE.get(ev.status, "")
        line = (f"[{style}]{ev.status:<11}[/] {escape(ev.host)}  {escape(ev.task)}"
                f" [dim]({ev.duration:.1f}s)[/]")
        if ev.status in ("failed", "unreachable"):
            line += f"\n    {escape(ev.message[:300])}"
        console.print(line, highlight=False)

    return show
