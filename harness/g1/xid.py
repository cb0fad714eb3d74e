"""G1's Xid check: NVIDIA Xid errors in a host's kernel log since boot, judged from sources
`dmesg -C` cannot clear.

Why not dmesg alone: the ring buffer is emptied by `dmesg -C` (or wraps), so a host that
had an Xid shows none. The journal (`journalctl -k -b`) keeps this boot's kernel log from
its start; it is the source that can prove there was none. NVML keeps no Xid counter
(`nvidia-smi -q` has no Xid field), and DCGM's field 230 (DCGM_FI_DEV_XID_ERRORS) holds
only the last Xid seen since its host engine watched it, and none of 79, 119, 120
(NVIDIA/DCGM issues 162 and 227): no proof of "none since boot" either. dmesg stays a
second source that can show an Xid, never alone a PASS. Pure functions over the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.g1.finding import Finding
from harness.probes.kernel_log import parse_journal_kernel, xid_events
from harness.reasons import Reason, listed


@dataclass(frozen=True)
class KernelLogs:
    """What a host's kernel log sources said: the journal of this boot (`journalctl -k
    -b`, which `dmesg -C` does not clear) and the ring buffer (`dmesg`, which it does).
    None: not read, with why."""

    journal: str | None
    dmesg: str | None
    journal_error: str = ""
    dmesg_error: str = ""


def xid(logs: KernelLogs) -> Finding:
    """An Xid in any source is a miss. No Xid is a PASS only where the journal holds this
    boot's kernel log from its start: the ring buffer alone can have been emptied
    (`dmesg -C`), and NVML keeps no Xid counter (nvidia-smi -q has none; DCGM's field 230
    holds only the last Xid since its host engine watched it). Otherwise unverifiable:
    INCONCLUSIVE with the reason, never a PASS."""
    journal = parse_journal_kernel(logs.journal) if logs.journal is not None else None
    ring = xid_events(logs.dmesg) if logs.dmesg is not None else None
    seen: dict[tuple[str, int], list[str]] = {}
    for source, events in (("journal", journal.xids if journal else ()), ("dmesg", ring or ())):
        for event in events:
            if source not in seen.setdefault(event, []):
                seen[event].append(source)
    problems = tuple(f"Xid {code} on {where} ({', '.join(src)})"
                     for (where, code), src in sorted(seen.items()))
    shown = [f"journal: {len(journal.xids)} Xid in {journal.entries} lines"
             + ("" if journal.gap is None else " (not the whole boot)")
             if journal is not None else f"journal: not read ({logs.journal_error})",
             f"dmesg: {len(ring)} Xid" if ring is not None
             else f"dmesg: not read ({logs.dmesg_error})"]
    shown_why = [
        Reason("g1.xid_journal", {"xids": len(journal.xids), "lines": journal.entries,
                                  "partial": "" if journal.gap is None
                                  else Reason("g1.xid_partial")})
        if journal is not None else Reason("g1.xid_journal_unread",
                                           {"error": logs.journal_error}),
        Reason("g1.xid_dmesg", {"xids": len(ring)}) if ring is not None
        else Reason("g1.xid_dmesg_unread", {"error": logs.dmesg_error})]
    gap = (journal.gap if journal is not None else
           f"journalctl -k -b gave nothing to read: {logs.journal_error}")
    undecided = not problems and gap is not None
    return Finding("no NVIDIA Xid in the kernel log since boot", "; ".join(shown), problems,
                   expected_why=Reason("g1.xid_expected"), found_why=listed(shown_why),
                   inconclusive=f"Xid unverifiable: {gap}; dmesg alone (which `dmesg -C` "
                                "empties) cannot show there was none" if undecided else None,
                   inconclusive_why=Reason("g1.xid_unverifiable", {"why": str(gap)})
                   if undecided else None)
