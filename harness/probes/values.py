"""Shared value handling for the hardware parsers: absent stays None, units normalised.

Tools print "N/A", "[N/A]", "[Not Supported]", "Unknown" or nothing where a value is not
available; each of those is None here, never 0 and never a guess.
"""

from __future__ import annotations

import re

from harness.errors import ParseError

_ABSENT = {"", "n/a", "[n/a]", "na", "not available", "[not supported]", "not supported",
           "unknown", "none", "-", "[unknown error]", "requested functionality has been deprecated"}
_BYTES = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4, "pb": 1000**5,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
          "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_NUMBER_UNIT = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z/%()]*)\s*$")


def absent(value: str | None) -> bool:
    return value is None or value.strip().lower() in _ABSENT


def text(value: str | None) -> str | None:
    """A text field, stripped; None when the tool says it has no value."""
    return None if absent(value) else value.strip()  # type: ignore[union-attr]


def number(value: str | None, *, what: str, line: int | None = None) -> float | None:
    """The number at the start of "27 C", "16.48 W", "4000 KB/s" or "0"; None when absent."""
    if absent(value):
        return None
    assert value is not None
    found = _NUMBER_UNIT.match(value)
    if not found:
        where = f" line {line}" if line is not None else ""
        raise ParseError(f"{what}{where}: {value.strip()[:60]!r} is not a number",
                         stage="parse")
    return float(found.group(1))


def integer(value: str | None, *, what: str, line: int | None = None) -> int | None:
    found = number(value, what=what, line=line)
    return None if found is None else int(found)


def size_bytes(value: str | None, *, what: str, line: int | None = None) -> int | None:
    """"81920 MiB", "1.5 TB", "512 B" in bytes; a bare number is bytes."""
    if absent(value):
        return None
    assert value is not None
    found = _NUMBER_UNIT.match(value)
    unit = found.group(2).lower() if found else ""
    if not found or (unit and unit not in _BYTES):
        where = f" line {line}" if line is not None else ""
        raise ParseError(f"{what}{where}: {value.strip()[:60]!r} is not a size", stage="parse")
    return int(float(found.group(1)) * _BYTES.get(unit, 1))


def json_int(value: object, *, what: str) -> int | None:
    """A JSON number that some nvme-cli versions print as a string ("0", "0x1f")."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        stripped = value.strip()
        if absent(stripped):
            return None
        try:
            return int(stripped, 0) if stripped.lower().startswith("0x") else int(float(stripped))
        except ValueError:
            raise ParseError(f"{what}: {stripped[:40]!r} is not a number", stage="parse") from None
    raise ParseError(f"{what}: {type(value).__name__} where a number belongs", stage="parse")
