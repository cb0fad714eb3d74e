"""fio `--output-format=json`: fio 3.x (`clat_ns`, `lat_ns`) and legacy 2.x (`clat` / `lat`
in microseconds), with warning lines before or after the document.

Bandwidth is bytes/s (fio's `bw` is KiB/s), latency seconds, percentiles keyed by the
percent as a float (fio prints "99.000000"). A job whose `error` is non-zero is kept with
its error: a caller must not read a number off it.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ParseError
from harness.probes.jsondoc import items, load_json, obj, opt_str
from harness.probes.values import json_int


@dataclass(frozen=True)
class FioDirection:
    io_bytes: int
    bandwidth_bytes_s: float
    iops: float
    clat_mean_s: float | None
    lat_mean_s: float | None
    clat_percentiles_s: dict[float, float]


@dataclass(frozen=True)
class FioJob:
    name: str
    error: int
    options: dict[str, str]
    read: FioDirection
    write: FioDirection


@dataclass(frozen=True)
class FioResult:
    version: str | None
    jobs: tuple[FioJob, ...]
    leading_lines: tuple[str, ...]  # fio's own notes before the JSON ("fio: ...")

    @property
    def failed(self) -> list[FioJob]:
        return [j for j in self.jobs if j.error]


def _latency(d: dict[str, object], key: str) -> tuple[float | None, dict[float, float]]:
    """(mean, percentiles) in seconds from `key_ns` (3.x) or `key` in usec (2.x)."""
    for name, scale in ((f"{key}_ns", 1e-9), (key, 1e-6)):
        if name in d:
            stats = obj(d[name], what=f"fio {name}")
            mean = stats.get("mean")
            pct = stats.get("percentile")
            pcts = ({float(k): float(v) * scale for k, v in obj(pct, what="percentile").items()
                     if isinstance(v, (int, float))} if pct is not None else {})
            return (float(mean) * scale if isinstance(mean, (int, float)) else None), pcts
    return None, {}


def _direction(d: dict[str, object], what: str) -> FioDirection:
    bw = d.get("bw")
    iops = d.get("iops")
    if not isinstance(bw, (int, float)) or not isinstance(iops, (int, float)):
        raise ParseError(f"fio {what}: no numeric bw / iops", stage="parse")
    clat_mean, pcts = _latency(d, "clat")
    lat_mean, _ = _latency(d, "lat")
    io_bytes = json_int(d.get("io_bytes"), what="io_bytes") or 0
    if "io_kbytes" in d:  # 3.x: io_bytes is bytes; 2.x had io_bytes in KiB
        io_bytes = json_int(d.get("io_bytes"), what="io_bytes") or 0
    elif io_bytes:
        io_bytes *= 1024
    return FioDirection(io_bytes, float(bw) * 1024, float(iops), clat_mean, lat_mean, pcts)


def parse_fio(raw: str) -> FioResult:
    doc = obj(load_json(raw, what="fio JSON"), what="fio JSON")
    if "jobs" not in doc:
        raise ParseError("fio JSON: no \"jobs\" key", stage="parse")
    leading = tuple(ln for ln in raw[:raw.find("{")].splitlines() if ln.strip())
    jobs = []
    for j in items(doc["jobs"], what="fio jobs"):
        name = opt_str(j.get("jobname")) or "?"
        options = {str(k): str(v) for k, v in obj(j.get("job options", {}), what="job options")
                   .items()}
        jobs.append(FioJob(name, json_int(j.get("error"), what="error") or 0, options,
                           _direction(obj(j.get("read"), what="read"), f"{name} read"),
                           _direction(obj(j.get("write"), what="write"), f"{name} write")))
    return FioResult(opt_str(doc.get("fio version")), tuple(jobs), leading)
