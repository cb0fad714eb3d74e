"""The process probes against real processes on this machine through LocalTransport: the
listener of a port is found with its real argv and environment (IPv4, IPv6), stop_process
stops exactly that process and refuses a wrong start time, and without root another
user's listener is reported as not visible rather than guessed."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from harness.errors import MeasurementError, TransportError
from harness.probes.process import (
    is_alive,
    listener_report,
    listeners,
    root_process,
    stop_process,
)
from harness.probes.redact import hash_secret
from harness.serving.identity import compare_arms, engine_facts
from harness.transport import LocalTransport
from harness.transport.result import CommandResult

TOKEN = "integration-not-a-secret-42"


def _free_port(family: socket.AddressFamily, addr: str) -> int:
    with socket.socket(family) as s:
        s.bind((addr, 0))
        return int(s.getsockname()[1])


def _ipv6_works() -> bool:
    try:
        _free_port(socket.AF_INET6, "::1")
        return True
    except OSError:
        return False


class Started:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def listener(self, addr: str, *, python: str = sys.executable, mark: str = "it",
                 preexec: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], int]:
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        port = _free_port(family, addr)
        env = {"PATH": "/usr/bin:/bin", "GATE_PROBE_MARK": mark, "HF_TOKEN": TOKEN}
        proc = subprocess.Popen([*preexec, python, "-m", "http.server", str(port), "--bind",
                                 addr], env=env, cwd="/", stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket(family) as s, contextlib.suppress(OSError):
                s.connect((addr, port))
                return proc, port
            if proc.poll() is not None:
                pytest.fail(f"the listener exited with {proc.returncode}")
            time.sleep(0.05)
        pytest.fail("the listener never listened")

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def started() -> Iterator[Started]:
    s = Started()
    try:
        yield s
    finally:
        s.stop_all()


def _start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


@pytest.mark.parametrize("addr", ["127.0.0.1", "::1"])
def test_listeners_finds_the_real_process_argv_and_env(started: Started, addr: str) -> None:
    if ":" in addr and not _ipv6_works():
        pytest.skip("::1 is not usable here")
    proc, port = started.listener(addr, mark=f"probe-{addr}")
    found = listeners(LocalTransport("here"), port)
    main = root_process(found)
    assert main.pid == proc.pid and main.start_ticks == _start_ticks(proc.pid)
    assert main.argv == (sys.executable, "-m", "http.server", str(port), "--bind", addr)
    assert main.env is not None and main.env["GATE_PROBE_MARK"] == f"probe-{addr}"
    assert main.env["HF_TOKEN"] == hash_secret(TOKEN) and TOKEN not in repr(found)
    assert main.uid == os.geteuid()
    assert listeners(LocalTransport(), _free_port(socket.AF_INET, "127.0.0.1")) == []
    facts = engine_facts(main.argv, main.env)
    assert compare_arms([facts], [facts], []).equal


def test_stop_process_refuses_a_wrong_start_time_then_stops_it(started: Started) -> None:
    proc, port = started.listener("127.0.0.1")
    t = LocalTransport()
    ticks = _start_ticks(proc.pid)
    assert is_alive(t, proc.pid, ticks) and not is_alive(t, proc.pid, ticks + 1)
    assert stop_process(t, proc.pid, ticks + 1, grace=1) == "gone"
    assert proc.poll() is None and is_alive(t, proc.pid, ticks)
    assert stop_process(t, proc.pid, ticks, grace=10) == "stopped"
    assert proc.wait(timeout=10) == -signal.SIGTERM
    assert not is_alive(t, proc.pid, ticks) and listeners(t, port) == []
    assert stop_process(t, proc.pid, ticks) == "gone"


def test_a_process_ignoring_sigterm_is_killed_after_the_grace(started: Started) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import signal, time\n"
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                             "print('ready', flush=True)\ntime.sleep(60)"],
                            stdout=subprocess.PIPE, start_new_session=True)
    started.procs.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    t0 = time.monotonic()
    assert stop_process(LocalTransport(), proc.pid, _start_ticks(proc.pid), grace=0.5) == "killed"
    assert time.monotonic() - t0 >= 0.5 and proc.wait(timeout=10) == -signal.SIGKILL


class AsNobody(LocalTransport):
    """This machine seen by an unprivileged SSH user: sudo=True runs as root again."""

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        if sudo:
            return super().run_shell(script, timeout=timeout, sudo=True)
        return self.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                         "sh", "-c", script], timeout=timeout)


def _nobody() -> int | None:
    with contextlib.suppress(KeyError):
        return pwd.getpwnam("nobody").pw_uid
    return None


NOBODY = _nobody()
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or NOBODY is None or shutil.which("setpriv") is None,
    reason="needs root, a nobody user and setpriv to act as another user")


@needs_root
def test_another_users_listener_is_not_visible_without_sudo(started: Started) -> None:
    proc, port = started.listener("127.0.0.1")  # root's
    t = AsNobody("as-nobody")
    report = listener_report(t, port)
    assert report.euid == NOBODY and report.processes == () and len(report.hidden) == 1
    with pytest.raises(MeasurementError, match="not visible to uid") as err:
        listeners(t, port)
    assert err.value.host == "as-nobody" and "sudo" in (err.value.hint or "")
    [main] = listeners(t, port, sudo=True)
    assert main.pid == proc.pid and main.env is not None
    with pytest.raises(TransportError, match="not permitted"):
        stop_process(t, proc.pid, _start_ticks(proc.pid), grace=1)
    assert proc.poll() is None


@needs_root
def test_an_unprivileged_user_sees_its_own_listener_and_environment(started: Started) -> None:
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no system python3 for nobody to run")
    proc, port = started.listener("127.0.0.1", python=python, mark="own", preexec=[
        "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"])
    t = AsNobody("as-nobody")
    [main] = listeners(t, port)
    assert main.uid == NOBODY and main.env is not None and main.env["GATE_PROBE_MARK"] == "own"
    assert main.argv[0] == python
    assert stop_process(t, main.pid, main.start_ticks, grace=10) == "stopped"
    proc.wait(timeout=10)
