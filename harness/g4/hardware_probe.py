"""Reads the hosts' hardware counters over the gate's own transport (never through the
soak's process, which may run on a host the vendor controls), stores each reading as
series per host, and judges them (harness/g4/hardware.py). A host that does not answer is
an unread source at that reading, not a stop."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from harness.errors import GateError, ParseError
from harness.g4.hardware import (
    JUDGED,
    PREFIX,
    SHOWN,
    HostReading,
    Text,
    hardware,
    read_gpu,
    read_nvme,
)
from harness.g4.judgement import Judgement
from harness.g4.said import SaidOnce
from harness.probes.nvme import parse_nvme_list
from harness.store.db import Store
from harness.store.writer import insert_series, series_of
from harness.transport import Transport

JOURNAL_KERNEL = ("journalctl", "-k", "-b", "--no-pager")
NVIDIA_SMI = ("nvidia-smi", "-q", "-x")
NVME_LIST = ("nvme", "list", "-o", "json")
TIMEOUT_S = 60.0


def _output(transport: Transport, argv: Sequence[str]) -> Text:
    """The command's stdout, or None and why (its exit code and last words)."""
    try:
        result = transport.run(list(argv), timeout=TIMEOUT_S, sudo=True)
    except (GateError, OSError) as exc:
        return None, f"{' '.join(argv)}: {exc}"[:300]
    if result.rc != 0:
        said = (result.stderr or result.stdout).strip().splitlines()
        return None, f"{' '.join(argv)} exited {result.rc}: {said[-1] if said else ''}"[:300]
    return result.stdout, ""


@dataclass(frozen=True)
class HardwareProbe:
    """The GPU hosts (Xid, ECC, NVMe) and the storage hosts (NVMe) of a soak."""

    gpu: Mapping[str, Transport]
    storage: Mapping[str, Transport]
    # sources the site declared it cannot read (gates.g4.unverifiable): not asked for, so
    # the run's infrastructure steps do not list a failure per host and reading
    skip: frozenset[str] = frozenset()

    @property
    def expected(self) -> dict[str, list[str]]:
        """source -> the hosts read for it (harness/g4/hardware.py `hardware`)."""
        gpus, every = sorted(self.gpu), sorted({*self.gpu, *self.storage})
        return {"xid": gpus, "ecc": gpus, "nvme": every}

    def read(self) -> list[HostReading]:
        out = []
        for host in sorted({*self.gpu, *self.storage}):
            transport = self.gpu.get(host) or self.storage[host]
            reading = HostReading(host, time.time())
            if host in self.gpu and not {"xid", "ecc"} <= self.skip:
                declared: Text = (None, "declared unverifiable")
                read_gpu(reading, declared if "xid" in self.skip
                         else _output(transport, JOURNAL_KERNEL),
                         declared if "ecc" in self.skip else _output(transport, NVIDIA_SMI))
                for source in self.skip:
                    reading.unread.pop(source, None)
            if "nvme" in self.skip:
                out.append(reading)
                continue
            listed = _output(transport, NVME_LIST)
            logs: dict[str, Text] = {}
            if listed[0] is not None:
                try:
                    devices = sorted({d.device for d in parse_nvme_list(listed[0])})
                except ParseError as exc:
                    listed = (None, f"nvme list: {exc}")
                    devices = []
                logs = {d: _output(transport, ("nvme", "smart-log", d, "-o", "json"))
                        for d in devices}
            read_nvme(reading, logs, listed)
            out.append(reading)
        return out


@dataclass
class HardwareWatch:
    """A soak's readings of its hosts' hardware, kept in the run's series (a resumed
    viewer judges from the first reading the first viewer stored)."""

    probe: HardwareProbe
    store: Store
    run_id: int
    event: Callable[..., None]
    _said: SaidOnce = field(default_factory=SaidOnce)

    def sample(self) -> None:
        """Every host now; a source a host cannot answer for is an event when that starts
        or its reason changes (not once per reading over 72 h)."""
        rows = []
        for reading in self.probe.read():
            rows += [{"source": reading.host, "metric": PREFIX + name, "labels": {},
                      "at": reading.at, "value": value}
                     for name, value in reading.values.items()]
            for source, why in reading.unread.items():
                if self._said.new((reading.host, source), why):
                    self.event(source="harness", name=f"G4 hardware {source}",
                               host=reading.host, status="failed", message=why[:500])
        insert_series(self.store, self.run_id, rows)

    def judge(self, declared: Mapping[str, str], started_at: float, window_s: float,
              windows: int) -> Judgement:
        names = (*(n for counters in JUDGED.values() for n in counters), *SHOWN)
        series = {PREFIX + n: series_of(self.store, self.run_id, PREFIX + n) for n in names}
        return hardware(series, self.probe.expected, declared, started_at, window_s, windows)
