"""JSON values as a customer reads them: `key: value` lines and dotted-key rows instead of
raw JSON cut off at 300 characters, and no paths of the machine the harness ran on.

A config snapshot printed as JSON took four pages of the appendix and showed the
operator's directories (`/tmp/.../engines/...`, `/home/.../.venv/bin/python`); the full
snapshot stays in the evidence pack (store.sqlite, report-model.json).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# An absolute path of two or more parts, not the path of a URL (`http://h:1/v1`).
_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.@+~-]+/)+(?P<last>[\w.@+{}~-]+)")


def shorten_paths(text: str) -> str:
    """`/tmp/demo/engines/x.sock` -> `…/x.sock`: what it is, not where it was."""
    return _PATH.sub(lambda m: "…/" + m.group("last"), text)


def scalar(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(scalar(v) for v in value) or "—"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return str(value)


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted keys with their leaf values; a list of mappings gets `[i]` indices; empty
    mappings and lists and None values are left out (they say nothing)."""
    if isinstance(value, dict):
        for k in sorted(value, key=str):
            yield from flatten(value[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}[{i}]")
    elif value is not None and value != [] and value != {}:
        yield prefix, value


def rows(value: Any) -> list[tuple[str, str]]:
    """(dotted key, value) rows of a JSON value, paths shortened."""
    return [(k, shorten_paths(scalar(v))) for k, v in flatten(value)]


def lines(value: Any, limit: int = 12) -> str:
    """A fact's value for one table cell: a scalar as itself, a mapping as `key: value`
    lines (at most `limit`, then how many more)."""
    if not isinstance(value, dict):
        return shorten_paths(scalar(value))
    found = rows(value)
    shown = [f"{k}: {v}" for k, v in found[:limit]]
    if len(found) > limit:
        shown.append(f"(+{len(found) - limit})")
    return "\n".join(shown) or "—"
