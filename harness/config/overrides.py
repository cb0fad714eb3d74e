"""`--set dotted.key=VALUE`: one config value changed from the command line.

An override is applied to the YAML mapping read from gate.yaml *before* validation, so
it passes the same models, bounds and cross-key checks as the file: a `--set` can never
set what the file could not. Each override also has a normalised text ("key=value") that
is part of the config digest a resume compares and is recorded on the run, so a run
started with `--set gates.g3.tiers=[16]` is not quietly resumed without it.

Grammar: KEY is dot-separated names, each optionally followed by list indexes
(`layouts[0].instances[1].port`), the way error messages print key paths; VALUE is one
YAML value (`16`, `zh`, `[4, 8]`, `{min: 3, max: 5}`, `""`). An empty VALUE is YAML's
null: `--set report.logo=` unsets the logo.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from harness.errors import ConfigError

_SEGMENT = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*)((?:\[\d+\])*)")
_INDEX = re.compile(r"\[(\d+)\]")
FORM = "dotted.key=VALUE, e.g. --set gates.g3.tiers=[16]"

Part = str | int


@dataclass(frozen=True)
class Override:
    """One parsed `--set`: where (`path`, as pydantic locates errors) and what."""

    path: tuple[Part, ...]
    value: Any

    @property
    def key(self) -> str:
        """The key as a user writes it: layouts[0].tp."""
        return key_text(self.path)

    @property
    def flag(self) -> str:
        """How messages name it: `--set layouts[0].tp`."""
        return f"--set {self.key}"

    @property
    def text(self) -> str:
        """Normalised `key=value`: the same override written two ways gives one text, and
        the text given back to --set means the same override."""
        return f"{self.key}={_value_text(self.value)}"


def key_text(path: Sequence[Part]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
    return out


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        try:
            if yaml.safe_load(value) == value and value == value.strip():
                return value  # zh, TP8: no quotes where YAML reads the word back as itself
        except yaml.YAMLError:
            pass
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "),
                      default=str)


def _malformed(item: str, why: str) -> ConfigError:
    shown = item if len(item) <= 60 else item[:57] + "..."
    return ConfigError(f"{why} in {shown!r}", key="--set", hint=f"write {FORM}")


def parse_key(item: str, key: str) -> tuple[Part, ...]:
    if not key:
        raise _malformed(item, "no key before '='")
    path: list[Part] = []
    for segment in key.split("."):
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            raise _malformed(item, f"bad key segment {segment!r}" if segment
                             else "an empty key segment")
        path.append(match.group(1))
        path.extend(int(i) for i in _INDEX.findall(match.group(2)))
    return tuple(path)


def parse_override(item: str) -> Override:
    """'gates.g3.tiers=[16]' -> Override(('gates', 'g3', 'tiers'), [16])."""
    key, sep, text = item.partition("=")
    if not sep:
        raise _malformed(item, "no '='")
    path = parse_key(item, key.strip())
    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError) as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"VALUE is not YAML: {problem}", key=f"--set {key_text(path)}",
                          hint="quote a string that YAML reads otherwise, e.g. "
                               "--set 'site.name=\"a: b\"'") from None
    return Override(path, value)


def parse_overrides(items: Sequence[str]) -> tuple[Override, ...]:
    """Every item parsed; the same key given twice is refused (which should win is a guess,
    and the run records both)."""
    parsed = tuple(parse_override(item) for item in items)
    seen: set[tuple[Part, ...]] = set()
    for o in parsed:
        if o.path in seen:
            raise ConfigError("given twice", key=o.flag, hint="keep one --set per key")
        seen.add(o.path)
    return parsed


def apply_overrides(raw: dict[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """A copy of `raw` with each override set, in order. Missing mappings on the way are
    created (the file may leave `gates.g3.evidence` to its defaults); a list index must
    exist; a step into a value that is neither mapping nor list is refused by name."""
    out = copy.deepcopy(raw)
    for o in overrides:
        node: Any = out
        for i, part in enumerate(o.path):
            last = i == len(o.path) - 1
            here = key_text(o.path[:i]) or "(top level)"
            if isinstance(part, int):
                if not isinstance(node, list):
                    raise ConfigError(f"{here} is not a list", key=o.flag)
                if part >= len(node):
                    items = f"{len(node)} item" + ("" if len(node) == 1 else "s")
                    raise ConfigError(f"{here} has {items}; [{part}] is not one of them",
                                      key=o.flag,
                                      hint=f"set the whole list: --set {here}=[...]")
            elif not isinstance(node, dict):
                kind = "a list" if isinstance(node, list) else f"the value {node!r}"
                raise ConfigError(f"{here} is {kind}, not a mapping with keys", key=o.flag)
            if last:
                node[part] = copy.deepcopy(o.value)
            else:
                if isinstance(node, dict) and node.get(part) is None:
                    node[part] = {}
                node = node[part]
    return out


def blame(loc: Sequence[Part], overrides: Sequence[Override]) -> Override | None:
    """The last override that set `loc`, a key inside it, or a mapping around it: an error
    there is the override's, not the file's."""
    where = tuple(loc)
    found = None
    for o in overrides:
        n = min(len(where), len(o.path))
        if where[:n] == o.path[:n]:
            found = o
    return found
