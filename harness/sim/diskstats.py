"""The simulated storage device: the tier's modelled reads and writes, accounted into a
file in /proc/diskstats format so the harness measures storage GB/s exactly as at a site.

One line, one device (`259 0 nvme9n1 ...`: sectors read is field 6, sectors written field
10, 512-byte sectors). Several engine processes share the file: each adds its own deltas
under an flock and replaces the file atomically (write a temp file, rename), so a reader
never sees a torn line and counters only grow, across restarts, like a real device's.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

from harness.errors import InfrastructureError, ParseError
from harness.sim.iometer import IoSnapshot
from harness.sim.spec import EngineSpec

SECTOR = 512
IO_BYTES = 1 << 20  # the modelled request size: one "io" per MiB moved
FLUSH_S = 0.25


@dataclass(frozen=True)
class DiskLine:
    major: int = 259
    minor: int = 0
    name: str = "nvme9n1"
    reads: int = 0
    reads_merged: int = 0
    sectors_read: int = 0
    ms_reading: int = 0
    writes: int = 0
    writes_merged: int = 0
    sectors_written: int = 0
    ms_writing: int = 0
    in_flight: int = 0
    ms_io: int = 0
    ms_weighted: int = 0
    discards: int = 0
    discards_merged: int = 0
    sectors_discarded: int = 0
    ms_discarding: int = 0
    flushes: int = 0
    ms_flushing: int = 0


_NUMERIC = [f.name for f in fields(DiskLine) if f.name != "name"]


def format_line(d: DiskLine) -> str:
    rest = " ".join(str(getattr(d, n)) for n in _NUMERIC[2:])
    return f"{d.major:4d} {d.minor:7d} {d.name} {rest}\n"


def parse_line(line: str) -> DiskLine:
    parts = line.split()
    if len(parts) < 14:
        raise ParseError(f"not a /proc/diskstats line: {line.strip()!r}", stage="sim diskstats")
    try:
        nums = [int(x) for x in parts[:2] + parts[3:]]
    except ValueError as exc:
        raise ParseError(f"not a /proc/diskstats line: {line.strip()!r}",
                         stage="sim diskstats") from exc
    nums += [0] * (len(_NUMERIC) - len(nums))
    kw: dict[str, int | str] = dict(zip(_NUMERIC, nums, strict=False))
    kw["name"] = parts[2]
    return DiskLine(**kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Delta:
    read_bytes: int = 0
    write_bytes: int = 0
    reads: int = 0
    writes: int = 0
    ms_reading: int = 0
    ms_writing: int = 0
    ms_io: int = 0
    in_flight: int = 0  # this process's current count (replaces its previous one)
    prev_in_flight: int = 0


def apply(d: DiskLine, delta: Delta) -> DiskLine:
    ms = delta.ms_reading + delta.ms_writing
    return replace(
        d,
        reads=d.reads + delta.reads,
        sectors_read=d.sectors_read + delta.read_bytes // SECTOR,
        ms_reading=d.ms_reading + delta.ms_reading,
        writes=d.writes + delta.writes,
        sectors_written=d.sectors_written + delta.write_bytes // SECTOR,
        ms_writing=d.ms_writing + delta.ms_writing,
        in_flight=max(0, d.in_flight - delta.prev_in_flight + delta.in_flight),
        ms_io=d.ms_io + delta.ms_io,
        ms_weighted=d.ms_weighted + ms,
    )


class DiskstatsFile:
    """Read-modify-replace of the shared file under an exclusive flock."""

    def __init__(self, path: Path, device: str, major: int = 259, minor: int = 0) -> None:
        self.path = path
        self.device = device
        self.major, self.minor = major, minor
        self._lock_path = path.with_name(path.name + ".lock")

    def update(self, delta: Delta) -> DiskLine:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                line = self._read()
                new = apply(line, delta)
                tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(format_line(new))
                os.replace(tmp, self.path)
                return new
            finally:
                os.close(fd)  # releases the flock
        except OSError as exc:
            raise InfrastructureError(f"cannot update the diskstats file: {exc}",
                                      stage="sim diskstats", command=str(self.path)) from exc

    def _read(self) -> DiskLine:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return DiskLine(self.major, self.minor, self.device)
        for line in text.splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == self.device:
                return parse_line(line)
        return DiskLine(self.major, self.minor, self.device)


class DiskstatsAccountant:
    """Turns an engine's cumulative IoSnapshot into deltas on the shared file."""

    def __init__(self, file: DiskstatsFile, snapshot: Callable[[], IoSnapshot],
                 now: Callable[[], float]) -> None:
        self.file = file
        self._snapshot = snapshot
        self._now = now
        self._last = IoSnapshot(0, 0, 0, 0, 0)
        self._last_t = now()
        self._carry_r = 0
        self._carry_w = 0

    def flush(self, *, final: bool = False) -> None:
        """Add what moved since the last flush; `final`: this process leaves (in_flight 0)."""
        snap = self._snapshot()
        t = self._now()
        dt_ms = int((t - self._last_t) * 1000)
        last = self._last
        dr = snap.read_bytes - last.read_bytes + self._carry_r
        dw = snap.write_bytes - last.write_bytes + self._carry_w
        self._carry_r, self._carry_w = dr % SECTOR, dw % SECTOR
        busy = last.in_flight > 0 or snap.in_flight > 0
        self.file.update(Delta(
            read_bytes=dr - self._carry_r, write_bytes=dw - self._carry_w,
            reads=_ios(snap.read_bytes) - _ios(last.read_bytes),
            writes=_ios(snap.write_bytes) - _ios(last.write_bytes),
            ms_reading=dt_ms * last.in_flight if dr else 0,
            ms_writing=dt_ms * last.in_flight if dw else 0,
            ms_io=dt_ms if busy else 0,
            in_flight=0 if final else snap.in_flight, prev_in_flight=last.in_flight,
        ))
        self._last, self._last_t = snap, t

    async def run(self, stop: asyncio.Event) -> None:
        """Flush every FLUSH_S until stop is set (the owner does the final flush)."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FLUSH_S)
            if not stop.is_set():
                self.flush()


def _ios(nbytes: int) -> int:
    return -(-nbytes // IO_BYTES)


# The GPU host's name for its KV volume's namespace (an NVMe-oF namespace is nvmeXnY).
KV_DEVICE = "nvme1n1"


def accountants(spec: EngineSpec, snapshot: Callable[[], IoSnapshot],
                now: Callable[[], float]) -> list[DiskstatsAccountant]:
    """The files an engine's tier reads are accounted into: the storage host's
    (--diskstats; with --storage-host-lies it counts the memory tier's hits too) and the
    GPU host's KV volume (--kv-diskstats: the device's reads only)."""
    out = []
    if spec.diskstats is not None:
        told = _lying(snapshot) if spec.storage_host_lies else snapshot
        out.append(DiskstatsAccountant(DiskstatsFile(spec.diskstats, spec.diskstats_device),
                                       told, now))
    if spec.kv_diskstats is not None:
        major, minor = _kv_numbers(spec)
        out.append(DiskstatsAccountant(DiskstatsFile(spec.kv_diskstats, KV_DEVICE, major, minor),
                                       snapshot, now))
    return out


def _lying(snapshot: Callable[[], IoSnapshot]) -> Callable[[], IoSnapshot]:
    """A storage host that counts the memory tier's hits as its device's reads."""
    def lied() -> IoSnapshot:
        snap = snapshot()
        return replace(snap, read_bytes=snap.read_bytes + snap.memory_read_bytes)
    return lied


def _kv_numbers(spec: EngineSpec) -> tuple[int, int]:
    """--kv-dev, else the device numbers of the filesystem the tier directory (or the
    --kv-diskstats file's directory) is on: what findmnt -T prints as MAJ:MIN for it."""
    if spec.kv_dev is not None:
        major, _, minor = spec.kv_dev.partition(":")
        return int(major), int(minor)
    where = spec.tier_dir if spec.tier_dir is not None else spec.kv_diskstats
    assert where is not None
    dev = os.stat(where if where.is_dir() else where.parent).st_dev
    return os.major(dev), os.minor(dev)
