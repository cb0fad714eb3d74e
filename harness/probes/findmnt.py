"""`findmnt -n -P -o SOURCE,FSTYPE,TARGET,MAJ:MIN -T PATH`: the filesystem a path lives on.

MAJ:MIN (optional: older captures lack it) is the device's numbers as /proc/diskstats
lists them; util-linux prints the key as `MAJ:MIN`, newer releases may print `MAJ_MIN`.

-P prints KEY="value" pairs, with a space or a quote inside a value escaped as \\x20 /
\\x22 (util-linux), so a source with a space parses. Where mounts are stacked on one
target, findmnt prints one line per mount; the last is the one a path reaches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError

_PAIR = re.compile(r'([A-Z_:]+)="((?:[^"\\]|\\.)*)"')
_HEX = re.compile(r"\\x([0-9a-fA-F]{2})")


@dataclass(frozen=True)
class Mount:
    source: str  # /dev/nvme1n1, server:/export, tmpfs, /dev/sda1[/subdir] (a bind mount)
    fstype: str
    target: str  # the mount point
    majmin: str | None = None  # "259:1": the device as /proc/diskstats numbers it


def parse_findmnt(raw: str) -> Mount:
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    if not lines:
        raise ParseError("findmnt: no output (no filesystem found for the path)",
                         stage="parse")
    pairs = {k: _HEX.sub(lambda m: chr(int(m.group(1), 16)), v)
             for k, v in _PAIR.findall(lines[-1])}
    missing = [k for k in ("SOURCE", "FSTYPE", "TARGET") if k not in pairs]
    if missing:
        raise ParseError(f"findmnt line {len(lines)}: no {', '.join(missing)} "
                         f"in {lines[-1][:120]!r}", stage="parse")
    majmin = pairs.get("MAJ:MIN") or pairs.get("MAJ_MIN")
    return Mount(pairs["SOURCE"], pairs["FSTYPE"], pairs["TARGET"], majmin or None)
