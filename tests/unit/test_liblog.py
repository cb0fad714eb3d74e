"""Library log lines reach a run's gate.log, never the console (issue 16)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.liblog import library_log_to, quiet_library_logs


def test_a_library_traceback_goes_to_the_run_log_not_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quiet_library_logs()
    noisy = logging.getLogger("paramiko.transport")
    noisy.error("Exception (client): Error reading SSH protocol banner")
    log = tmp_path / "run-1" / "gate.log"
    with library_log_to(log):
        noisy.error("Exception (client): during the run")
    noisy.error("after the run")
    assert capsys.readouterr().err == ""
    text = log.read_text()
    assert "during the run" in text and "after the run" not in text
    assert "banner" not in text  # before the run: dropped, not printed
