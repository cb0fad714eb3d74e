"""CommandResult.check and the capped output buffer."""

from __future__ import annotations

import pytest

from harness.errors import TransportError
from harness.transport import CommandFailedError, CommandResult
from harness.transport.result import OutputBuffer


def _result(rc: int, stderr: str = "", stdout: str = "") -> CommandResult:
    return CommandResult("gpu1", ("nvme", "list", "-o", "json"), rc, stdout, stderr, 1.0, 0.2)


def test_check_returns_the_result_when_ok() -> None:
    ok = _result(0, stdout="{}")
    assert ok.ok and ok.check("g1 nvme") is ok


def test_check_raises_with_host_command_stage_and_stderr_tail() -> None:
    bad = _result(1, stderr="x" * 5000 + "\nnvme: permission denied")
    with pytest.raises(TransportError) as info:
        bad.check("g1 nvme")
    exc = info.value
    assert isinstance(exc, CommandFailedError) and exc.result is bad
    assert (exc.host, exc.command, exc.stage) == ("gpu1", "nvme list -o json", "g1 nvme")
    assert "exited 1" in exc.message and exc.message.endswith("nvme: permission denied")
    assert len(exc.message) < 1000


def test_buffer_keeps_the_head_and_marks_the_rest() -> None:
    buf = OutputBuffer(cap=10)
    for chunk in (b"0123", b"456789ab", b"cdef"):
        buf.feed(chunk)
    assert buf.truncated and buf.kept == 10 and buf.dropped == 6
    text = buf.text()
    assert text.startswith("0123456789\n[gate: output truncated")
    assert "kept the first 10 bytes, dropped 6 more" in text


def test_buffer_decodes_bad_utf8_without_failing() -> None:
    buf = OutputBuffer()
    buf.feed("é".encode()[:1] + "世界".encode())
    assert buf.text().endswith("世界") and not buf.truncated
