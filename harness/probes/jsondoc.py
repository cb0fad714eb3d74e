"""Reading a tool's JSON output: the document may sit between warning lines (fio prints
"fio: ..." notes before it, nvme-cli may print a kernel notice), and a bad document is a
ParseError naming its line."""

from __future__ import annotations

import json

from harness.errors import ParseError


def load_json(raw: str, *, what: str) -> object:
    """The first JSON document in `raw`, skipping lines before it and after it."""
    starts = [i for i in (raw.find("{"), raw.find("[")) if i >= 0]
    if not starts:
        raise ParseError(f"{what}: no JSON document in the output", stage="parse")
    start = min(starts)
    # A "[" inside a leading warning line ("fio: [warn] ...") is not the document: start
    # at the first line that opens with { or [.
    offset = 0
    for line in raw.splitlines(keepends=True):
        if line.lstrip().startswith(("{", "[")):
            start = offset + (len(line) - len(line.lstrip()))
            break
        offset += len(line)
    try:
        value, _end = json.JSONDecoder().raw_decode(raw, start)
    except json.JSONDecodeError as e:
        raise ParseError(f"{what} line {e.lineno}: {e.msg}", stage="parse") from None
    return value


def obj(value: object, *, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise ParseError(f"{what}: expected a JSON object, found {type(value).__name__}",
                         stage="parse")
    return value


def items(value: object, *, what: str) -> list[dict[str, object]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ParseError(f"{what}: expected a list of objects", stage="parse")
    return value


def opt_str(value: object) -> str | None:
    if value is None:
        return None
    stripped = str(value).strip()
    return stripped or None
