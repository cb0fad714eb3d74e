"""Bytes the tier has moved so far, including the finished part of reads and writes in
flight, so a /proc/diskstats sampler sees bandwidth while a phase runs, not only at the
end of each read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import count


@dataclass(frozen=True)
class IoSnapshot:
    read_bytes: int
    write_bytes: int
    reads_done: int
    writes_done: int
    in_flight: int
    memory_read_bytes: int = 0  # what the memory tier served (never the device's)


class IoMeter:
    def __init__(self) -> None:
        self._read_done = 0
        self._write_done = 0
        self._reads_done = 0
        self._writes_done = 0
        self._memory_read = 0
        self._ids = count()
        # reads progress on the shared virtual clock V, writes on wall time
        self._reads: dict[int, tuple[float, float, int]] = {}
        self._writes: dict[int, tuple[float, float, int]] = {}
        # Called when a read completes: a device counts sectors read at completion, so a
        # sampler right after a phase must see every read of it (harness/sim/run.py
        # flushes the diskstats file here).
        self.on_read_done: Callable[[], None] | None = None

    def begin_read(self, v0: float, v1: float, nbytes: int) -> int:
        rid = next(self._ids)
        self._reads[rid] = (v0, v1, nbytes)
        return rid

    def end_read(self, rid: int, *, completed: bool) -> None:
        _, _, nbytes = self._reads.pop(rid)
        if completed:
            self._read_done += nbytes
            self._reads_done += 1
            if self.on_read_done is not None:
                self.on_read_done()

    def memory_read(self, nbytes: int) -> None:
        """A load the memory tier served: not the device's, but a storage host that lies
        (EngineSpec.storage_host_lies) counts it as if it were."""
        self._memory_read += nbytes
        if self.on_read_done is not None:
            self.on_read_done()

    def begin_write(self, t0: float, t1: float, nbytes: int) -> int:
        wid = next(self._ids)
        self._writes[wid] = (t0, t1, nbytes)
        return wid

    def end_write(self, wid: int) -> None:
        _, _, nbytes = self._writes.pop(wid)
        self._write_done += nbytes
        self._writes_done += 1

    def snapshot(self, v_now: float, t_now: float) -> IoSnapshot:
        return IoSnapshot(
            read_bytes=self._read_done + _partial(self._reads.values(), v_now),
            write_bytes=self._write_done + _partial(self._writes.values(), t_now),
            reads_done=self._reads_done,
            writes_done=self._writes_done,
            in_flight=len(self._reads) + len(self._writes),
            memory_read_bytes=self._memory_read,
        )


def _partial(spans: object, now: float) -> int:
    total = 0
    for a, b, nbytes in spans:  # type: ignore[attr-defined]
        if now >= b or b <= a:
            total += nbytes
        elif now > a:
            total += int(nbytes * (now - a) / (b - a))
    return total
