"""A playbook run must leave gate's signal handling alone: ansible-runner, called from
the main thread without a cancel callback, installs SIGTERM / SIGINT handlers of its own
that outlive the run, after which `gate run` could no longer be stopped."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import pytest

from harness.ansible import run_playbook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transport"


class Stop(Exception):
    """What gate's runner turns SIGTERM into (it raises KeyboardInterrupt)."""


def _inventory(tmp_path: Path) -> Path:
    path = tmp_path / "hosts.ini"
    path.write_text("[gpu]\nlocalhost ansible_connection=local "
                    f"ansible_python_interpreter={sys.executable}\n")
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_signal_handlers_are_unchanged_by_a_playbook(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    run_playbook(FIXTURES / "echo_vars.yml", inventory=_inventory(tmp_path),
                 known_hosts=tmp_path / "kh", limit=None,
                 extravars={"gate_note": "n", "extra_note": "e", "target_dir": str(tmp_path),
                            "file_name": "f"},
                 artifact_dir=tmp_path / "art")
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_sigterm_during_a_playbook_stops_it_and_reaches_the_caller(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleep.pid"

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stop(signum)

    def send_when_sleeping() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not pid_file.exists():
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        threading.Thread(target=send_when_sleeping, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(Stop):
            run_playbook(FIXTURES / "sleep.yml", inventory=_inventory(tmp_path),
                         known_hosts=tmp_path / "kh", limit=None,
                         extravars={"pid_file": str(pid_file)}, artifact_dir=tmp_path / "art")
        assert time.monotonic() - started < 50  # not the playbook's 60 s
    finally:
        signal.signal(signal.SIGTERM, previous)
    # ansible-playbook, its forked workers and the task's command are all gone.
    inventory = str(tmp_path / "hosts.ini")
    sleeper = int(pid_file.read_text())
    deadline = time.monotonic() + 15
    while (_running_with(inventory) or _alive(sleeper)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running_with(inventory), "ansible-playbook outlived the interrupt"
    assert not _alive(sleeper), "the interrupted task's command is still running"


def _running_with(word: str) -> bool:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and proc.name != str(os.getpid()):
            try:
                cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if word.encode() in cmdline and _alive(int(proc.name)):
                return True
    return False


def test_a_cancel_event_stops_a_playbook_run_in_another_thread(tmp_path: Path) -> None:
    """An arm's instances act in parallel threads: an interrupt of the gate run reaches
    their playbooks through the cancel event, and nothing of them keeps running."""
    from harness.ansible import PlaybookCancelled

    pid_file = tmp_path / "sleep.pid"
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def play() -> None:
        try:
            run_playbook(FIXTURES / "sleep.yml", inventory=_inventory(tmp_path),
                         known_hosts=tmp_path / "kh", limit=None,
                         extravars={"pid_file": str(pid_file)}, artifact_dir=tmp_path / "art",
                         cancel=cancel)
        except BaseException as exc:  # the test inspects it
            outcome.append(exc)

    worker = threading.Thread(target=play)
    worker.start()
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    cancel.set()
    worker.join(50)
    assert not worker.is_alive() and len(outcome) == 1
    assert isinstance(outcome[0], PlaybookCancelled)
    sleeper = int(pid_file.read_text())
    inventory = str(tmp_path / "hosts.ini")
    deadline = time.monotonic() + 15  # ansible-playbook may take a moment to exit
    while (_alive(sleeper) or _running_with(inventory)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(sleeper) and not _running_with(inventory)
