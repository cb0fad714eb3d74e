"""G2's fio jobs and their judgement: the argv for each job on a target, and the figure a
finished run gives against the vendor's spec."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.config.models import FioTarget
from harness.probes.fio import FioResult
from harness.progress_log import Step

if TYPE_CHECKING:  # plan imports this module's `wanted`
    from harness.g2.plan import FioCell
from harness.reasons import Reason


@dataclass(frozen=True)
class Job:
    rw: str
    bs: str
    iodepth: int
    numjobs: int
    figure: str  # what the job measures: "MB/s", "IOPS", "us p99"


def job(name: str, numjobs: int) -> Job:
    return {"seq-read": Job("read", "1M", 32, 1, "MB/s"),
            "seq-write": Job("write", "1M", 32, 1, "MB/s"),
            "rand-read": Job("randread", "4k", 32, numjobs, "IOPS"),
            "lat-qd1": Job("randread", "4k", 1, 1, "us p99")}[name]


def target_file(target: FioTarget) -> str:
    """A raw device as configured; in a directory, gate-fio.<name>.dat (removed after)."""
    if target.path.startswith("/dev/"):
        return target.path
    return posixpath.join(target.path, f"gate-fio.{target.name}.dat")


def argv(target: FioTarget, name: str, numjobs: int) -> list[str]:
    j = job(name, numjobs)
    return ["fio", f"--name={name}", f"--filename={target_file(target)}", f"--rw={j.rw}",
            f"--bs={j.bs}", f"--iodepth={j.iodepth}", f"--numjobs={j.numjobs}",
            f"--size={target.size}", f"--runtime={target.runtime_s:g}", "--time_based",
            "--ioengine=libaio", f"--direct={int(target.direct)}", "--group_reporting",
            "--output-format=json"]


def step(cell: FioCell, cells: Sequence[FioCell]) -> Step:
    """The progress line's step of one job: `G2 · fio · gpu1 local-disk · seq-read 3/8`,
    its runtime the ETA's first guess."""
    index = next((i for i, c in enumerate(cells, 1) if c.key == cell.key), len(cells))
    return Step("G2", ("fio", f"{cell.host} {cell.target.name}",
                       f"{cell.job} {index}/{len(cells)}"),
                index=index, total=len(cells), expected_s=cell.target.runtime_s)


def figure(result: FioResult, name: str) -> float:
    """The job's figure from a group-reported run (one job entry)."""
    j = result.jobs[0]
    d = j.write if name == "seq-write" else j.read
    if name in ("seq-read", "seq-write"):
        return d.bandwidth_bytes_s / 1e6
    if name == "rand-read":
        return d.iops
    p99 = d.clat_percentiles_s.get(99.0)
    return p99 * 1e6 if p99 is not None else float("nan")


def wanted(target: FioTarget, name: str, fraction: float) -> tuple[str, float | None]:
    """(the expectation in words, the bound) from the vendor's spec; None: not judged."""
    spec = target.spec
    if name == "lat-qd1":
        if spec.lat_qd1_p99_us is None:
            return "p99 latency measured (no vendor figure)", None
        bound = spec.lat_qd1_p99_us / fraction
        return f"p99 <= {bound:.0f} us ({spec.lat_qd1_p99_us:g} us / {fraction:g})", bound
    value = {"seq-read": spec.seq_read_mbps, "seq-write": spec.seq_write_mbps,
             "rand-read": spec.rand_read_iops}[name]
    unit = "IOPS" if name == "rand-read" else "MB/s"
    if value is None:
        return f"{unit} measured (no vendor figure)", None
    return (f">= {value * fraction:.0f} {unit} ({fraction:.0%} of {value:g})",
            value * fraction)


def io_mode(target: FioTarget) -> tuple[str, Reason]:
    """How fio read and wrote (its --direct), in words and as a Reason: `direct: false`
    goes through the page cache, whose figures can be the host's memory rather than the
    device (a reader must know before comparing them with a datasheet or a KV tier)."""
    if target.direct:
        return "direct I/O", Reason("g2.io_direct")
    return "buffered (page cache)", Reason("g2.io_buffered")


def measured(value: float, unit: str, target: FioTarget, where: str,
             where_why: Reason | str) -> tuple[str, Reason]:
    """A fio figure with how fio did its I/O and what it ran on ("1109 MB/s, buffered
    (page cache), /dev/vda (ext4) at /"), in English and as a Reason."""
    io, io_why = io_mode(target)
    return (f"{value:.0f} {unit}, {io}, {where}",
            Reason("g2.fio_measured_io", {"value": f"{value:.0f}", "unit": unit, "io": io_why,
                                          "where": where_why}))


def wanted_why(target: FioTarget, name: str, fraction: float) -> Reason:
    """`wanted`'s words as a Reason (harness.reasons), for the report's languages."""
    spec = target.spec
    if name == "lat-qd1":
        if spec.lat_qd1_p99_us is None:
            return Reason("g2.fio_no_figure_p99")
        return Reason("g2.fio_expected_p99", {
            "bound": f"{spec.lat_qd1_p99_us / fraction:.0f}",
            "spec": f"{spec.lat_qd1_p99_us:g}", "fraction": f"{fraction:g}"})
    value = {"seq-read": spec.seq_read_mbps, "seq-write": spec.seq_write_mbps,
             "rand-read": spec.rand_read_iops}[name]
    unit = "IOPS" if name == "rand-read" else "MB/s"
    if value is None:
        return Reason("g2.fio_no_figure", {"unit": unit})
    return Reason("g2.fio_expected_min", {"value": f"{value * fraction:.0f}", "unit": unit,
                                          "fraction": f"{fraction:.0%}",
                                          "spec": f"{value:g}"})
