"""G2's GDS read throughput: the gdsio command for a GPU host, and the judgement of what
it printed (pure; gates/g2_baseline/test_g2.py runs it).

Why cuFile's log is read too: gdsio prints `XferType: GPUD` for what it was asked (-x 0)
even when cuFile fell back to POSIX reads through a bounce buffer (nvidia-fs not serving
the volume). Its log says so; the run then measured the page cache / CPU path, not GDS,
and is a STOP-LOSS (GDS does not work on the accelerator volume), never a PASS.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from harness.config.models import Gdsio
from harness.probes.gdsio import GdsioReport
from harness.reasons import Param, Reason

WORK_DIR = "gate-gdsio"  # made inside the configured path, removed after
LOG_NAME = "cufile.log"


def work_dir(spec: Gdsio) -> str:
    return posixpath.join(spec.path, WORK_DIR)


def argv(spec: Gdsio) -> list[str]:
    """Sequential GPU-direct read (-x 0 -I 0) of `threads` files in the work directory."""
    return [spec.gdsio, "-D", work_dir(spec), "-d", str(spec.gpu), "-w", str(spec.threads),
            "-s", spec.size, "-i", spec.io_size, "-x", "0", "-I", "0",
            "-T", f"{spec.seconds:g}"]


def env(spec: Gdsio) -> dict[str, str]:
    """cuFile logs to a file of ours, at a level that includes its compat-mode notices."""
    return {"CUFILE_LOGFILE_PATH": posixpath.join(work_dir(spec), LOG_NAME),
            "CUFILE_LOGGING_LEVEL": "INFO"}


def wanted(spec: Gdsio, fraction: float) -> tuple[str, float | None]:
    """(the expectation in words, the bound in GiB/s); None: measured, not judged."""
    if spec.read_gib_s is None:
        return "GPUD read measured (no vendor figure)", None
    bound = spec.read_gib_s * fraction
    return (f"GPUD read >= {bound:.2f} GiB/s ({fraction:.0%} of {spec.read_gib_s:g}), "
            "no compat-mode fallback"), bound


def wanted_why(spec: Gdsio, fraction: float) -> Reason:
    """`wanted`'s words as a Reason (harness.reasons), for the report's languages."""
    if spec.read_gib_s is None:
        return Reason("g2.gdsio_no_figure")
    return Reason("g2.gdsio_expected", {"bound": f"{spec.read_gib_s * fraction:.2f}",
                                        "fraction": f"{fraction:.0%}",
                                        "spec": f"{spec.read_gib_s:g}"})


@dataclass(frozen=True)
class GdsioVerdict:
    gib_s: float
    measured: str  # for the check's `measured` column
    missed: tuple[str, ...]  # STOP-LOSS reasons; empty: as specified
    error: str = ""  # nothing a GDS read could be judged on (ERROR)
    measured_why: Reason | None = None  # `measured` as a Reason (harness.reasons)


def judge(report: GdsioReport, bound: float | None) -> GdsioVerdict:
    reads = report.reads()
    if not reads:
        return GdsioVerdict(float("nan"), "no read run", (),
                            "gdsio printed no READ summary (asked -I 0)",
                            Reason("g2.gdsio_no_read"))
    run = reads[0]
    if run.xfer_type != "GPUD":
        return GdsioVerdict(run.throughput_gib_s, f"XferType {run.xfer_type}", (),
                            f"gdsio ran XferType {run.xfer_type}, not GPUD (-x 0)",
                            Reason("g2.gdsio_xfer", {"xfer": str(run.xfer_type)}))
    measured = (f"{run.throughput_gib_s:.2f} GiB/s GPUD read, {run.threads} threads, "
                f"IO {run.io_size_kib} KiB, {run.avg_latency_us:.0f} us avg")
    why: dict[str, Param] = {
        "gib": f"{run.throughput_gib_s:.2f}", "threads": run.threads, "io": run.io_size_kib,
        "latency": f"{run.avg_latency_us:.0f}",
        "compat": Reason("g2.gdsio_compat") if report.fallback else ""}
    missed = []
    if report.fallback:
        measured += ", cuFile compat mode"
        missed.append("cuFile fell back to compat mode (not a GDS measurement): "
                      + "; ".join(report.fallback[:2]))
    if bound is not None and run.throughput_gib_s < bound:
        missed.append(f"{run.throughput_gib_s:.2f} GiB/s < {bound:.2f} GiB/s")
    return GdsioVerdict(run.throughput_gib_s, measured, tuple(missed),
                        measured_why=Reason("g2.gdsio_measured", why))
