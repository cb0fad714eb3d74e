"""The simulated storage device's /proc/diskstats file: the line format the harness's
own parser reads, and deltas from several writers summed under the lock."""

from __future__ import annotations

import threading
from pathlib import Path

from harness.probes.diskstats import parse_diskstats
from harness.sim.diskstats import (
    SECTOR,
    Delta,
    DiskLine,
    DiskstatsAccountant,
    DiskstatsFile,
    format_line,
    parse_line,
)
from harness.sim.iometer import IoSnapshot

FIXTURE = Path(__file__).parents[1] / "fixtures" / "probes" / "proc-diskstats_debian12-vm_vda.txt"


def test_format_round_trips_a_real_line() -> None:
    real = next(line for line in FIXTURE.read_text().splitlines() if " vda " in line)
    d = parse_line(real)
    assert (d.major, d.name, d.sectors_read, d.sectors_written) == (254, "vda", 4283858,
                                                                     3179248)
    assert format_line(d).split() == real.split()


def test_the_harness_parser_reads_our_file(tmp_path: Path) -> None:
    f = DiskstatsFile(tmp_path / "diskstats", "nvme9n1")
    f.update(Delta(read_bytes=8 * SECTOR, write_bytes=2 * SECTOR, reads=1, writes=1))
    text = (tmp_path / "diskstats").read_text()
    assert text.startswith(" 259       0 nvme9n1 ")
    c = parse_diskstats(text)["nvme9n1"]
    assert (c.sectors_read, c.sectors_written) == (8, 2)


def test_concurrent_writers_add_up(tmp_path: Path) -> None:
    path = tmp_path / "diskstats"

    def writer() -> None:
        f = DiskstatsFile(path, "nvme9n1")  # one per "process"
        for _ in range(50):
            f.update(Delta(read_bytes=SECTOR, write_bytes=3 * SECTOR))

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    d = parse_line(path.read_text())
    assert (d.sectors_read, d.sectors_written) == (200, 600)


def test_accountant_turns_snapshots_into_sector_deltas(tmp_path: Path) -> None:
    snaps = iter([IoSnapshot(1000, 0, 0, 0, 1), IoSnapshot(5 * SECTOR + 7, 1 << 20, 1, 1, 0)])
    clock = iter([0.0, 0.5, 1.0])
    acct = DiskstatsAccountant(DiskstatsFile(tmp_path / "d", "nvme9n1"),
                               lambda: next(snaps), lambda: next(clock))
    acct.flush()
    d = parse_line((tmp_path / "d").read_text())
    assert (d.sectors_read, d.in_flight) == (1, 1)  # 1000 B: one whole sector so far
    acct.flush(final=True)
    d = parse_line((tmp_path / "d").read_text())
    assert d.sectors_read == 5  # the 7 bytes left over wait for the next sector
    assert d.sectors_written == (1 << 20) // SECTOR
    assert d.in_flight == 0
    assert d == parse_line(format_line(d))
    assert DiskLine().name == "nvme9n1"
