"""`gate plan`'s flag values: each parsed by a click callback into the planner's units, a
bad one a single line naming the flag (exit 4), never click's usage screen.

Why callbacks and not click's types: click's own range and type errors print a usage
block of several lines; a field engineer typing `--ttft-p50 0` should get one line that
names the flag and says what it takes, as every other error of gate does.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import click

from harness.errors import UsageError
from harness.plan import DTYPE_BYTES, Context

DURATION = re.compile(r"(-?(?:\d+(?:\.\d*)?|\.\d+))\s*(ms|s|m|h)?")
UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(text: str, flag: str) -> float:
    """A duration: "10s", "500ms", "1.5m", "2h"; a bare number is seconds; above 0."""
    found = DURATION.fullmatch(text.strip())
    if found is None:
        raise UsageError(f"{text!r} is not a duration (e.g. 10s, 500ms, 1.5m)", key=flag)
    value = float(found.group(1)) * UNIT_S[found.group(2) or "s"]
    if not value > 0:
        raise UsageError(f"must be above 0, not {text!r}", key=flag)
    return value


def number(text: str, flag: str, *, integer: bool = False, low: float = 0.0,
           low_ok: bool = False, high: float | None = None) -> float:
    """A finite number above `low` (at least, with `low_ok`), below `high`."""
    try:
        value = float(int(text)) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise UsageError(f"{text!r} is not {kind}", key=flag) from None
    if not math.isfinite(value) or value < low or (value == low and not low_ok) or (
            high is not None and value >= high):
        bound = f"at least {low:g}" if low_ok else f"above {low:g}"
        raise UsageError(f"must be {bound}{f' and below {high:g}' if high else ''}, not "
                         f"{text}", key=flag)
    return value


def _flag(param: click.Parameter) -> str:
    return max(param.opts, key=len)


def positive_int(_: click.Context, param: click.Parameter, value: str | None) -> int | None:
    return None if value is None else int(number(value, _flag(param), integer=True))


def zero_or_more_int(_: click.Context, param: click.Parameter,
                     value: str | None) -> int | None:
    if value is None:
        return None
    return int(number(value, _flag(param), integer=True, low_ok=True))


def positive(_: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else number(value, _flag(param))


def zero_or_more(_: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else number(value, _flag(param), low_ok=True)


def share(_: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else number(value, _flag(param), low_ok=True, high=1.0)


def duration(_: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else seconds(value, _flag(param))


def dtype(_: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and value not in DTYPE_BYTES:
        raise UsageError(f"{value!r} is not one of {', '.join(DTYPE_BYTES)}",
                         key=_flag(param))
    return value


def tiers(_: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[int, ...]:
    got = tuple(int(number(v, _flag(param), integer=True)) for v in value)
    return tuple(sorted(set(got)))


def contexts(_: click.Context, param: click.Parameter,
             value: tuple[str, ...]) -> tuple[Context, ...]:
    """TOKENS or TOKENS:SHARE, repeatable: shares on all or none (none: equal), summing to 1."""
    flag = _flag(param)
    if not value:
        return ()
    parts = [v.split(":", 1) for v in value]
    tokens = [int(number(p[0], flag, integer=True)) for p in parts]
    given = [len(p) == 2 for p in parts]
    if any(given) and not all(given):
        raise UsageError("give a share to every context or to none (TOKENS:SHARE)", key=flag)
    shares = ([number(p[1], flag, high=1.0 + 1e-9) for p in parts] if any(given)
              else [1.0 / len(parts)] * len(parts))
    if not math.isclose(sum(shares), 1.0, abs_tol=1e-6):
        raise UsageError(f"the shares must sum to 1, not {sum(shares):g}", key=flag)
    return tuple(Context(t, s) for t, s in zip(tokens, shares, strict=True))


def hf_config(path: str | None) -> dict[str, Any] | None:
    """A local Hugging Face config.json, parsed (never downloaded)."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read it: {exc.strerror or exc}", file=path,
                         key="--model-config") from None
    except UnicodeDecodeError:
        raise UsageError("not a text file", file=path, key="--model-config") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                         file=path, key="--model-config") from None
    if not isinstance(data, dict):
        raise UsageError("not a JSON object (a model's config.json)", file=path,
                         key="--model-config")
    return data
