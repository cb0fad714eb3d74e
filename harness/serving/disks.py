"""The accelerator's devices, read from /proc/diskstats over the gate's own transport
around each measured phase, on both ends of the wire: the storage hosts'
(`gates.g3.evidence.devices`, the vendor's machines) and the GPU hosts' KV volume
(`gates.g3.evidence.kv_volume`, the customer's machines: the NVMe-oF namespace the
engine's tier reads). A `dd` on a storage host shows on its devices, never on the GPU
host's; a KV store held in memory shows on neither (harness/g3/devices.py judges)."""

from __future__ import annotations

import itertools
import shlex
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.config.models import KvVolume
from harness.errors import GateError, MeasurementError
from harness.probes import mounts
from harness.probes.diskstats import bytes_read_of, total_bytes_read
from harness.probes.findmnt import Mount, parse_findmnt
from harness.serving.problems import JSONDict
from harness.transport import Transport

STAGE = "g3 kv_volume"


@dataclass(frozen=True)
class DiskSource:
    """One host's diskstats and which of its lines count: the `majmin` line (the KV
    volume, as findmnt numbered it), else the named `devices` (empty: every whole disk)."""

    host: str
    transport: Transport
    path: str
    devices: tuple[str, ...] = ()
    majmin: str | None = None

    def bytes_read(self) -> int:
        text = self.transport.read_file(self.path).decode("utf-8", "replace")
        if self.majmin is None:
            return total_bytes_read(text, list(self.devices))
        found = bytes_read_of(text, self.majmin)
        if found is None:
            raise MeasurementError(f"no line {self.majmin} in {self.path}: the KV volume's "
                                   "device is gone", host=self.host, stage=STAGE)
        return found


@dataclass
class StorageSample:
    host: str
    at: float
    bytes_read: int


@dataclass
class StorageSampler:
    """Reads each source's diskstats every `interval` s in a background thread."""

    sources: Sequence[DiskSource]
    interval: float = 1.0
    samples: list[StorageSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _read_all(self) -> None:
        for source in self.sources:
            try:
                self.samples.append(StorageSample(source.host, time.time(),
                                                  source.bytes_read()))
            except (GateError, OSError) as exc:
                self.errors.append(f"{source.host}: {exc}")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._read_all()

    def __enter__(self) -> StorageSampler:
        self._read_all()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="diskstats")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 30)
        self._read_all()

    def series(self, metric: str = "storage_read_bytes") -> list[JSONDict]:
        """Cumulative bytes read since the phase began, per host (store `series` rows)."""
        first: dict[str, int] = {}
        out: list[JSONDict] = []
        for s in self.samples:
            base = first.setdefault(s.host, s.bytes_read)
            out.append({"source": s.host, "metric": metric, "labels": {},
                        "at": s.at, "value": float(s.bytes_read - base)})
        return out

    def bandwidth(self) -> dict[str, float]:
        """GB/s between samples, summed over hosts per instant: p50, max and total bytes;
        `hosts`: how many hosts were read at the phase's start and end (0: none sampled,
        so the bytes say nothing)."""
        rates: list[float] = []
        total = 0.0
        hosts = 0
        for host in {s.host for s in self.samples}:
            pts = [s for s in self.samples if s.host == host]
            total += pts[-1].bytes_read - pts[0].bytes_read if pts else 0
            hosts += len(pts) >= 2
            for a, b in itertools.pairwise(pts):
                if b.at > a.at:
                    rates.append((b.bytes_read - a.bytes_read) / (b.at - a.at) / 1e9)
        if not rates:
            return {"gbps_p50": 0.0, "gbps_max": 0.0, "bytes_read": total,
                    "hosts": float(hosts)}
        arr = np.asarray(rates)
        return {"gbps_p50": float(np.percentile(arr, 50)), "gbps_max": float(arr.max()),
                "bytes_read": total, "hosts": float(hosts)}


def storage_sources(hosts: Iterable[tuple[str, Transport]], path: str,
                    devices: Sequence[str]) -> list[DiskSource]:
    """The storage hosts' sources: the same device names on each."""
    return [DiskSource(name, transport, path, tuple(devices)) for name, transport in hosts]


def kv_volume_source(host: str, transport: Transport, volume: KvVolume) -> DiskSource:
    """The KV volume on one GPU host, resolved as G2 resolves its targets: the directory
    must exist, `findmnt -T` must put it on what the volume declares (never the root
    filesystem unless declared; never tmpfs / overlay with `direct`), and the device must
    have a line in that host's diskstats. MeasurementError (host, command, stage) before
    anything is measured, otherwise."""
    if not transport.run(["test", "-d", volume.path], timeout=30).ok:
        raise MeasurementError(f"{volume.path} is not a directory on {host}", host=host,
                               stage=STAGE, key="gates.g3.evidence.kv_volume.path",
                               hint="mount the accelerator's volume there (G3 reads its "
                                    "device's reads beside the storage hosts')")
    argv = mounts.argv(volume.path)
    found = transport.run(argv, timeout=30)
    command = shlex.join(argv)
    if not found.ok:
        raise MeasurementError(f"findmnt failed: {found.stderr.strip()[:300]}", host=host,
                               command=command, stage=STAGE)
    mount = parse_findmnt(found.stdout)
    why = mounts.problem(volume, mount, zfs=_zfs(transport, mount, volume))
    if why is not None:
        raise MeasurementError(why, host=host, command=command, stage=STAGE,
                               key="gates.g3.evidence.kv_volume")
    if mount.majmin is None:
        raise MeasurementError(f"findmnt printed no MAJ:MIN for {volume.path}", host=host,
                               command=command, stage=STAGE)
    text = transport.read_file(volume.diskstats).decode("utf-8", "replace")
    if bytes_read_of(text, mount.majmin) is None:
        raise MeasurementError(
            f"{volume.path} is on {mounts.described(mount)}, which has no line "
            f"{mount.majmin} in {volume.diskstats}: not a block device whose reads G3 can "
            "count", host=host, command=command, stage=STAGE,
            key="gates.g3.evidence.kv_volume")
    return DiskSource(host, transport, volume.diskstats, majmin=mount.majmin)


def kv_volume_sources(hosts: Mapping[str, Transport],
                      volume: KvVolume | None) -> dict[str, DiskSource]:
    """Every layout host's KV volume (empty without `kv_volume`)."""
    if volume is None:
        return {}
    return {name: kv_volume_source(name, transport, volume)
            for name, transport in sorted(hosts.items())}


def _zfs(transport: Transport, mount: Mount, volume: KvVolume) -> tuple[int, int] | None:
    if mount.fstype != "zfs" or not volume.direct:
        return None
    version = transport.run(["cat", "/sys/module/zfs/version"], timeout=30)
    return mounts.zfs_version(version.stdout) if version.ok else None
