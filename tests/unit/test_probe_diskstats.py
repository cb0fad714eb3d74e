"""/proc/diskstats parser on a real capture of this machine kind (tests/fixtures/probes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ParseError
from harness.probes.diskstats import parse_diskstats, select_devices, total_bytes_read

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "probes" / \
    "proc-diskstats_debian12-vm_vda.txt"


def test_real_capture_parses_and_whole_disks_exclude_loops_and_partitions() -> None:
    text = FIXTURE.read_text()
    counters = parse_diskstats(text)
    assert "vda" in counters and "loop0" in counters
    whole = [c.device for c in select_devices(counters, [])]
    assert whole == ["vda"]
    vda_line = next(line for line in text.splitlines() if line.split()[2] == "vda")
    assert counters["vda"].bytes_read == int(vda_line.split()[5]) * 512
    assert total_bytes_read(text, ["vda"]) == counters["vda"].bytes_read


def test_named_devices_and_unknown_shape() -> None:
    line = "259 0 nvme9n1 10 0 2048 5 3 0 4096 2 0 7 7 0 0 0 0 0 0\n"
    part = "259 1 nvme9n1p1 10 0 2048 5 3 0 4096 2 0 7 7 0 0 0 0 0 0\n"
    assert [c.device for c in select_devices(parse_diskstats(line + part), [])] == ["nvme9n1"]
    assert total_bytes_read(line, ["nvme9n1"]) == 2048 * 512
    with pytest.raises(ParseError, match="unknown shape"):
        parse_diskstats("nvme0n1 1 2 3\n")
