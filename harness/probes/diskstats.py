"""/proc/diskstats: sectors read / written per device, for storage bandwidth evidence.

Format (Documentation/admin-guide/iostats.rst): major minor name, then reads completed,
reads merged, sectors read, ms reading, writes completed, writes merged, sectors written,
... Sectors are always 512 bytes here, whatever the device's block size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError

SECTOR = 512
# Whole disks: nvme0n1 (not nvme0n1p1), sda (not sda1), vda, xvda, md0.
_WHOLE = re.compile(r"^(nvme\d+n\d+|[shv]d[a-z]+|xvd[a-z]+|md\d+)$")


@dataclass(frozen=True)
class DiskCounters:
    device: str
    sectors_read: int
    sectors_written: int

    @property
    def bytes_read(self) -> int:
        return self.sectors_read * SECTOR

    @property
    def bytes_written(self) -> int:
        return self.sectors_written * SECTOR


def parse_diskstats(text: str) -> dict[str, DiskCounters]:
    out: dict[str, DiskCounters] = {}
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 14 or not (fields[0].isdigit() and fields[1].isdigit()):
            raise ParseError(f"diskstats line {n} has an unknown shape: {line[:80]!r}",
                             stage="diskstats")
        try:
            out[fields[2]] = DiskCounters(fields[2], int(fields[5]), int(fields[9]))
        except ValueError:
            raise ParseError(f"diskstats line {n}: non-numeric counters",
                             stage="diskstats") from None
    return out


def select_devices(counters: dict[str, DiskCounters], devices: list[str]) -> list[DiskCounters]:
    """The named devices, or every whole disk (partitions would double-count)."""
    if devices:
        return [counters[d] for d in devices if d in counters]
    return [c for name, c in counters.items() if _WHOLE.match(name)]


def total_bytes_read(text: str, devices: list[str]) -> int:
    return sum(c.bytes_read for c in select_devices(parse_diskstats(text), devices))


def bytes_read_of(text: str, majmin: str) -> int | None:
    """Bytes read by the device numbered `majmin` ("259:1", as findmnt's MAJ:MIN names
    it); None when no line has those numbers (a filesystem with no block device of its
    own: NFS, tmpfs, btrfs's anonymous numbers)."""
    major, _, minor = majmin.partition(":")
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) >= 14 and fields[0] == major and fields[1] == minor:
            try:
                return int(fields[5]) * SECTOR
            except ValueError:
                raise ParseError(f"diskstats line {n}: non-numeric counters",
                                 stage="diskstats") from None
    return None
