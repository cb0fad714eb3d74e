"""The kernel log as gate reads it for NVIDIA Xid errors: `journalctl -k` (the journal,
which `dmesg -C` does not clear) and `dmesg`. Pure functions over the tools' outputs; G1
judges a boot's log (harness/g1/xid.py), G4 the Xid that appear while it soaks."""

from __future__ import annotations

import re
from dataclasses import dataclass

_XID = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+),?")
# The kernel's first message of a boot: a journal that holds it holds the whole boot.
_BOOT_START = re.compile(r"kernel: Linux version ")


def xid_events(kernel_log: str) -> list[tuple[str, int]]:
    """(device, code) of every `NVRM: Xid` line, in order (dmesg or journal format)."""
    return [(where, int(code)) for where, code in _XID.findall(kernel_log)]


@dataclass(frozen=True)
class JournalKernel:
    """`journalctl -k -b` read: how many lines, whether it reaches back to the boot's
    first kernel message, and its Xid events."""

    entries: int
    boot_start: bool
    first: str  # its first entry (shown when it does not reach back)
    xids: tuple[tuple[str, int], ...]

    @property
    def gap(self) -> str | None:
        """Why this journal cannot show the boot had no Xid (None: it can)."""
        if not self.entries:
            return "no kernel messages of this boot in the journal"
        if not self.boot_start:
            return ("the journal's kernel log of this boot does not reach back to its start "
                    f"(rotated or vacuumed; it begins: {self.first[:120]!r})")
        return None


def parse_journal_kernel(text: str) -> JournalKernel:
    """Pure: journalctl's own lines (`-- No entries --`, `-- Logs begin at ...`, `-- Boot
    ...`, a `Hint:` about permissions) are not entries."""
    lines = [line for line in text.splitlines() if line.strip()
             and not line.startswith(("-- ", "Hint: "))]
    return JournalKernel(len(lines), any(_BOOT_START.search(line) for line in lines),
                         lines[0] if lines else "", tuple(xid_events(text)))
