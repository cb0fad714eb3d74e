"""The forked PDF writer (harness/report/pdf_child.py): real forks, real WeasyPrint."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from harness.errors import GateError
from harness.report.pdf_child import PdfChild

HTML = "<html><body><p>gate 报告 PASS</p></body></html>"
STACK = '"DejaVu Sans", sans-serif'

needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2,
                                reason="the child is forked only with fork and two cores")


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


def _started() -> PdfChild:
    child = PdfChild.start(STACK)
    assert child is not None, "forked where fork is safe and useful"
    return child


@needs_fork
def test_the_child_writes_the_pdf_and_is_gone_after(tmp_path: Path) -> None:
    out = tmp_path / "r.pdf"
    with _started() as child:
        pid = child._process.pid
        assert child.write(HTML, out) is True
    assert out.read_bytes().startswith(b"%PDF-")
    assert not _alive(pid)


@needs_fork
def test_an_unused_child_exits_when_closed() -> None:
    child = _started()
    pid = child._process.pid
    child.close()
    assert not _alive(pid)


@needs_fork
def test_an_os_error_in_the_child_is_raised_here_as_the_same_error(tmp_path: Path) -> None:
    target = tmp_path / "a-directory.pdf"
    target.mkdir()
    with _started() as child, pytest.raises(OSError) as caught:
        child.write(HTML, target)
    assert caught.value.errno == errno.EISDIR
    assert caught.value.filename == str(target)


@needs_fork
def test_a_lost_child_says_so_and_the_caller_writes_the_pdf_itself(tmp_path: Path) -> None:
    child = _started()
    child._process.kill()
    child._process.join(5)
    assert child.write(HTML, tmp_path / "r.pdf") is False
    child.close()


@needs_fork
def test_a_second_write_is_refused_not_sent_to_a_child_that_is_done(tmp_path: Path) -> None:
    with _started() as child:
        assert child.write(HTML, tmp_path / "one.pdf") is True
        assert child.write(HTML, tmp_path / "two.pdf") is False
    assert not (tmp_path / "two.pdf").exists()


def test_no_child_is_forked_beside_other_threads() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert PdfChild.start(STACK) is None
    finally:
        stop.set()
        other.join()


@needs_fork
def test_an_error_is_a_gate_error_naming_the_pdf(tmp_path: Path) -> None:
    """What WeasyPrint raises besides OSError reaches the caller as a GateError."""
    with _started() as child, pytest.raises(GateError, match=r"writing the PDF .*r\.pdf "
                                                             r"failed: TypeError"):
        child.write(None, tmp_path / "r.pdf")  # type: ignore[arg-type]
