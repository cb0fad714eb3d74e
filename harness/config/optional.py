"""`gates.gN.optional`, checked against the gate's plan before a run starts.

An entry names a check exactly: its function (`test_gdsio`, every host's) or its whole id
(`test_gdsio[gpu1]`). One that names nothing the suite plans is a typo or a check of
another gate, and would silently make nothing optional (or, under the old substring rule,
something else): a usage error naming the key and the entry, with the closest check.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from harness.errors import ConfigError


def function_of(check_id: str) -> str:
    """`test_gdsio` of `test_gdsio[gpu1]` (a check without parameters is its own)."""
    return check_id.split("[", 1)[0]


def names(plan: Sequence[str]) -> list[str]:
    """What an optional entry may say for this plan: each function, then each id."""
    functions = sorted({function_of(c) for c in plan})
    return [*functions, *sorted(set(plan) - set(functions))]


def unknown(entries: Sequence[str], plan: Sequence[str]) -> list[str]:
    """The entries that name no planned check, in the config's order."""
    known = set(names(plan))
    return [e for e in entries if e not in known]


def check_optional(entries: Sequence[str], plan: Sequence[str], *, key: str,
                   file: str | None = None, functions: Sequence[str] = ()) -> None:
    """Raise a ConfigError (exit 4) for the first entry that names no planned check
    (`functions`: the suite's check functions, each valid whether this config plans it
    or not)."""
    known = sorted({*names(plan), *functions})
    for entry in unknown(entries, known):
        close = difflib.get_close_matches(entry, known, n=1, cutoff=0.6)
        hint = (f"did you mean `{close[0]}`?" if close else
                f"checks this gate plans: {', '.join(names(plan)[:8]) or 'none'}")
        raise ConfigError(f"{entry!r} names no check this gate plans (a function such as "
                          "test_gdsio, or one id such as test_gdsio[gpu1])", file=file,
                          key=key, hint=hint)
