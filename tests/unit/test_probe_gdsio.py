"""gdsio's run summaries on real captured outputs (tests/fixtures/hw/gdsio-*, SOURCES.md
there): one line, a line wrapped across three, a write with -V (write then read), other
transfer types, and cuFile's log saying it fell back to compat mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ParseError
from harness.probes.gdsio import parse_gdsio
from harness.probes.kinds import detect

HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"


def read(name: str) -> str:
    return (HW / name).read_text(encoding="utf-8")


def test_one_gpud_read_summary() -> None:
    report = parse_gdsio(read("gdsio-x0-read_onizuka-vm_quadro-p400.txt"))
    (run,) = report.runs
    assert (run.io_type, run.xfer_type, run.threads, run.io_depth) == ("READ", "GPUD", 1, None)
    assert (run.transferred_kib, run.dataset_kib, run.io_size_kib) == (16117760, 10485760,
                                                                       "256")
    assert (run.throughput_gib_s, run.avg_latency_us) == (1.564272, 155.969457)
    assert (run.ops, run.seconds) == (62960, 9.826353)
    assert run.gpu_direct and report.reads() == [run] and report.fallback == ()


def test_bounce_buffer_transfer_is_not_gpu_direct() -> None:
    (run,) = parse_gdsio(read("gdsio-x2-read_onizuka-vm_quadro-p400_cpu-gpu.txt")).runs
    assert run.xfer_type == "CPU_GPU" and not run.gpu_direct


def test_a_summary_wrapped_across_lines_reads_as_one() -> None:
    text = read("gdsio-x0-randread_p2pdma-doc_l40s_wrapped.txt")
    assert len(text.splitlines()) == 3
    (run,) = parse_gdsio(text).runs
    assert (run.io_type, run.io_size_kib, run.throughput_gib_s, run.ops) == (
        "RANDREAD", "64", 0.030136, 14927)


def test_random_read_and_write_runs() -> None:
    (rand,) = parse_gdsio(read("gdsio-x0-randread_schmaustech_nfs-rdma_l40s_32threads.txt")).runs
    (write,) = parse_gdsio(read("gdsio-x0-write_schmaustech_nfs-rdma_l40s_1m.txt")).runs
    assert (rand.threads, rand.throughput_gib_s) == (32, 0.569229)
    assert rand in parse_gdsio(read(
        "gdsio-x0-randread_schmaustech_nfs-rdma_l40s_32threads.txt")).reads()
    assert (write.io_type, write.io_size_kib, write.avg_latency_us) == ("WRITE", "1024",
                                                                        12487.658159)


def test_cufile_compat_mode_lines_are_collected_once_each() -> None:
    """A write with -V prints a write run, `Verifying data`, then a read run; cuFile's log
    (after them here) says nvidia-fs did not serve the file: not a GDS measurement."""
    report = parse_gdsio(read("gdsio-x0-write-verify_notes_nvme_compat-mode-cufile-log.txt"))
    assert [r.io_type for r in report.runs] == ["WRITE", "READ"]
    assert all(r.xfer_type == "GPUD" for r in report.runs)  # what gdsio claims
    assert report.fallback == (
        "ERROR  cufio-fs:199 NVMe Driver not registered with nvidia-fs!!!",
        "NOTICE  cufio:293 cuFileHandleRegister GDS not supported or disabled by config, "
        "using cuFile posix read/write with compat mode enabled")


def test_detected_by_auto_past_log_lines() -> None:
    text = read("gdsio-x0-write-verify_notes_nvme_compat-mode-cufile-log.txt")
    assert detect(text).name == "gdsio"


@pytest.mark.parametrize("text", ["", "Error: file size must be specified\n",
                                  "IoType: READ XferType: GPUD Threads: 1 DataSetSize:\n"])
def test_no_summary_is_a_parse_error_quoting_line_1(text: str) -> None:
    with pytest.raises(ParseError, match="no \"IoType"):
        parse_gdsio(text)
