"""What G1 reads to identify software: `sha256sum FILE...`, `stat -c '%s %n' FILE...`, and
the package versions a Python prints (harness.g1.collect.VERSIONS_SCRIPT: JSON)."""

from __future__ import annotations

import re

from harness.errors import ParseError
from harness.probes.jsondoc import load_json, obj

_SHA = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")
_STAT = re.compile(r"^(\d+) (.+)$")


def parse_sha256sum(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip() or line.startswith("sha256sum: "):  # "No such file" goes to stderr
            continue
        found = _SHA.match(line)
        if not found:
            raise ParseError(f"sha256sum line {n}: {line[:60]!r}", stage="parse")
        out[found.group(2)] = found.group(1)
    return out


def parse_stat_sizes(raw: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, line in enumerate(raw.splitlines(), 1):
        if not line.strip() or line.startswith("stat: "):
            continue
        found = _STAT.match(line)
        if not found:
            raise ParseError(f"stat line {n}: {line[:60]!r}", stage="parse")
        out[found.group(2)] = int(found.group(1))
    return out


def parse_versions(raw: str) -> dict[str, str | None]:
    """{"vllm": "0.25.1", "lmcache": null}: null where the package is not installed."""
    doc = obj(load_json(raw, what="package versions"), what="package versions")
    return {str(k): (None if v is None else str(v)) for k, v in doc.items()}
