"""G1's Xid check reads the journal (`journalctl -k -b`), which `dmesg -C` does not clear:
an Xid in any source is a miss; no Xid is a PASS only where the journal holds this boot
from its first kernel message; an empty or rotated journal leaves Xid unverifiable
(INCONCLUSIVE), whatever dmesg says. On real captures (tests/fixtures/simhosts/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

from harness.g1 import judge
from harness.g1.xid import KernelLogs
from harness.probes.kernel_log import parse_journal_kernel, xid_events

CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "simhosts"


def read(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


XID = read("journalctl-k_ogkm-issue1150_xid45.txt")
BOOT = read("journalctl-k_linux-insides_ubuntu24.04_boot-start.txt")
NONE = read("journalctl-k-b_lab-vm_no-journal.txt")


def test_the_journal_parser_on_real_captures() -> None:
    boot = parse_journal_kernel(BOOT)
    assert (boot.entries, boot.boot_start, boot.xids, boot.gap) == (8, True, (), None)
    empty = parse_journal_kernel(NONE)
    assert (empty.entries, empty.boot_start) == (0, False)
    assert empty.gap == "no kernel messages of this boot in the journal"
    xids = parse_journal_kernel(XID)
    assert xids.entries == 7 and not xids.boot_start
    assert set(xids.xids) == {("PCI:0000:dc:00", 45), ("PCI:0000:ed:00", 45),
                              ("PCI:0000:ba:00", 45), ("PCI:0000:97:00", 45)}
    assert "does not reach back to its start" in str(xids.gap)
    assert xids.first.startswith("kernel: NVRM: Xid (PCI:0000:dc:00): 45")


def test_an_xid_in_the_journal_is_a_miss_though_dmesg_was_cleared() -> None:
    found = judge.xid(KernelLogs(XID, ""))  # dmesg -C: the ring buffer is empty
    assert not found.ok and found.inconclusive is None
    assert found.problems == ("Xid 45 on PCI:0000:97:00 (journal)",
                              "Xid 45 on PCI:0000:ba:00 (journal)",
                              "Xid 45 on PCI:0000:dc:00 (journal)",
                              "Xid 45 on PCI:0000:ed:00 (journal)")
    assert "journal: 7 Xid in 7 lines" in found.found and "dmesg: 0 Xid" in found.found


def test_the_same_xid_in_both_sources_is_one_problem_naming_both() -> None:
    found = judge.xid(KernelLogs(XID, XID))
    assert found.problems[0] == "Xid 45 on PCI:0000:97:00 (journal, dmesg)"
    assert len(found.problems) == 4


def test_a_journal_of_the_whole_boot_without_xid_passes() -> None:
    found = judge.xid(KernelLogs(BOOT, ""))
    assert found.ok and found.inconclusive is None and judge.unjudged("xid", found) is None
    assert found.found == "journal: 0 Xid in 8 lines; dmesg: 0 Xid"


def test_no_journal_is_unverifiable_whatever_dmesg_says() -> None:
    """The hole `dmesg -C` opened: an empty ring buffer (or a clean one) and no journal is
    INCONCLUSIVE with the reason, never a PASS."""
    for ring in ("", "[    0.000000] Linux version 6.8.0\n", None):
        found = judge.xid(KernelLogs(NONE, ring, "", "" if ring is not None else "exit 1"))
        assert found.ok and found.inconclusive is not None, ring
        assert "no kernel messages of this boot in the journal" in found.inconclusive
        assert found.inconclusive_why is not None
        assert found.inconclusive_why.code == "g1.xid_unverifiable"


def test_a_missing_journalctl_or_a_rotated_journal_is_unverifiable() -> None:
    missing = judge.xid(KernelLogs(None, "", "journalctl -k -b: tool missing on the host"))
    assert missing.inconclusive is not None and "tool missing" in missing.inconclusive
    assert "journal: not read (journalctl -k -b: tool missing" in missing.found
    rotated = "\n".join(BOOT.splitlines()[1:]) + "\n"  # the boot's first line vacuumed away
    late = judge.xid(KernelLogs(rotated, ""))
    assert late.inconclusive is not None and "rotated or vacuumed" in late.inconclusive
    assert "(not the whole boot)" in late.found


def test_dmesg_alone_can_fail_but_never_pass() -> None:
    log = "[812.1] NVRM: Xid (PCI:0000:17:00): 79, pid=0, GPU has fallen off the bus.\n"
    assert xid_events(log) == [("PCI:0000:17:00", 79)]
    failed = judge.xid(KernelLogs(None, log, "no journal"))
    assert not failed.ok and failed.inconclusive is None
    clean = judge.xid(KernelLogs(None, "", "no journal"))
    assert clean.ok and clean.inconclusive is not None
