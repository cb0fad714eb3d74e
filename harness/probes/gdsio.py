"""GDS's `gdsio`: one summary per run (a write with -V adds a read), and the cuFile log
lines that say the run did not go GPU-direct.

gdsio prints each run as one line (a terminal or a log may wrap it anywhere between its
fields):

    IoType: READ XferType: GPUD Threads: 4 [IoDepth: 8] DataSetSize: 818796544/4096000(KiB)
    IOSize: 1024(KiB) Throughput: 6.524658 GiB/sec, Avg_Latency: 1197.370995 usecs
    ops: 799606 total_time 119.679102 secs

`XferType: GPUD` is what gdsio was asked for (-x 0), not proof of the path taken: where
nvidia-fs cannot serve the file, cuFile falls back to POSIX reads through a bounce buffer
("compat mode") and says so only in its log ("NVMe Driver not registered with
nvidia-fs!!!", "... using cuFile posix read/write with compat mode enabled"). Those lines
are collected as `fallback`; a run beside them is not a GDS measurement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.errors import ParseError

_RUN = re.compile(
    r"IoType:\s*(?P<io>\w+)\s+XferType:\s*(?P<xfer>\w+)\s+Threads:\s*(?P<threads>\d+)"
    r"(?:\s+IoDepth:\s*(?P<depth>\d+))?"
    r"\s+DataSetSize:\s*(?P<done>\d+)(?:/(?P<total>\d+))?\(KiB\)"
    r"\s+IOSize:\s*(?P<iosize>[\d-]+)\(KiB\)"
    r"\s+Throughput:\s*(?P<gib>[\d.]+)\s*GiB/sec,?"
    r"\s+Avg_Latency:\s*(?P<lat>[\d.]+)\s*usecs"
    r"\s+ops:\s*(?P<ops>\d+)\s+total_time\s+(?P<secs>[\d.]+)\s*secs")
# What cuFile logs when it cannot go GPU-direct (cufio-fs / cufio error and notice lines).
_FALLBACK = re.compile(r"not registered with nvidia-fs|compat mode enabled|"
                       r"GDS not supported|posix read/write", re.I)


@dataclass(frozen=True)
class GdsioRun:
    io_type: str  # READ, WRITE, RANDREAD, RANDWRITE
    xfer_type: str  # GPUD (-x 0), CPUONLY, CPU_GPU, GPUD_ASYNC, GPU_BATCH ...
    threads: int
    io_depth: int | None
    transferred_kib: int
    dataset_kib: int | None  # the files' size (-s x threads); None where not printed
    io_size_kib: str  # "1024", or a range "16384-32768-4096" (-i min:max:step)
    throughput_gib_s: float
    avg_latency_us: float
    ops: int
    seconds: float

    @property
    def gpu_direct(self) -> bool:
        """Asked for the GPU-direct path (GPUD, GPUD_ASYNC, GPU_BATCH), as gdsio says."""
        return self.xfer_type.startswith("GPU")


@dataclass(frozen=True)
class GdsioReport:
    runs: tuple[GdsioRun, ...]
    fallback: tuple[str, ...]  # cuFile's own lines saying it fell back to compat mode

    def reads(self) -> list[GdsioRun]:
        return [r for r in self.runs if r.io_type in ("READ", "RANDREAD")]


def parse_gdsio(raw: str) -> GdsioReport:
    """Every run summary in `raw` (stdout and stderr as captured, log lines around them
    allowed). No summary at all is a ParseError: the run measured nothing."""
    flat = " ".join(raw.split())
    runs = tuple(GdsioRun(
        io_type=m["io"], xfer_type=m["xfer"], threads=int(m["threads"]),
        io_depth=int(m["depth"]) if m["depth"] else None,
        transferred_kib=int(m["done"]),
        dataset_kib=int(m["total"]) if m["total"] else None,
        io_size_kib=m["iosize"], throughput_gib_s=float(m["gib"]),
        avg_latency_us=float(m["lat"]), ops=int(m["ops"]), seconds=float(m["secs"]))
        for m in _RUN.finditer(flat))
    if not runs:
        first = next((ln.strip() for ln in raw.splitlines() if ln.strip()), "")
        raise ParseError(f"gdsio: no \"IoType: ... Throughput: ... GiB/sec\" summary "
                         f"(line 1: {first[:80]!r})", stage="parse")
    fallback = tuple(dict.fromkeys(_log_message(ln) for ln in raw.splitlines()
                                   if _FALLBACK.search(ln)))
    return GdsioReport(runs, fallback)


def _log_message(line: str) -> str:
    """A cuFile log line without its timestamp and pid, so repeats collapse to one."""
    return re.sub(r"^\s*[\d-]+ [\d:]+ \[pid=\d+ tid=\d+\]\s*", "", line).strip()
