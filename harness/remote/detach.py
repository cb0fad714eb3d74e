"""Start the agent's phase so that it outlives the SSH session that started it.

systemd-run where systemd is PID 1 and the user's manager answers (the phase is then a
transient unit: journald keeps its output, `systemctl --user stop` ends it); otherwise the
process gets its own session (setsid, the nohup of Python) with output appended to
agent.log. Either way the phase writes its own pid into status.json when it runs, and
`start` writes the pid it knows first, so the gate can tell a dead phase from a slow one.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

LOG = "agent.log"
UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\-]{1,240}$")


def agent_argv(*args: str) -> list[str]:
    """This agent run again with `args`, as it was started: the shipped agent's -I -B (no
    PYTHON* variables, no .pyc) hold for the detached process too (harness.remote.ship)."""
    flags = [f for f, on in (("-I", sys.flags.isolated), ("-B", sys.flags.dont_write_bytecode))
             if on]
    return [sys.executable, *flags, "-m", "harness.remote.agent", *args]


def phase_argv(spec: Path, directory: Path) -> list[str]:
    return agent_argv("run", "--spec", str(spec), "--dir", str(directory))


def systemd_run_argv(unit: str, spec: Path, directory: Path) -> list[str]:
    """The transient user unit that runs the phase."""
    return systemd_argv(unit, phase_argv(spec, directory), directory)


def systemd_argv(unit: str, argv: list[str], directory: Path) -> list[str]:
    """The transient user unit that runs `argv` in `directory`. Output is appended to
    agent.log as on the nohup path, so one reader serves both."""
    if not UNIT_NAME.match(unit):
        raise ValueError(f"not a systemd unit name: {unit!r}")
    log = directory.resolve() / LOG
    return ["systemd-run", "--user", "--quiet", "--collect", f"--unit={unit}",
            f"--working-directory={directory.resolve()}",
            f"--property=StandardOutput=append:{log}",
            f"--property=StandardError=append:{log}",
            "--property=KillMode=control-group", "--", *argv]


def systemd_usable() -> bool:
    """systemd is PID 1 and this user's manager answers (not so in most containers, nor
    over SSH without lingering)."""
    if not Path("/run/systemd/system").is_dir() or shutil.which("systemd-run") is None:
        return False
    probe = subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True,
                           text=True, timeout=10, check=False)
    return probe.stdout.strip() in ("running", "degraded")


def start_detached(spec: Path, directory: Path, unit: str) -> tuple[str, int | None]:
    """Start the phase; ("systemd", None) or ("nohup", pid)."""
    return start_argv(phase_argv(spec, directory), directory, unit)


def start_argv(argv: list[str], directory: Path, unit: str) -> tuple[str, int | None]:
    """Start `argv` detached in `directory` (a phase, or G4's soak: harness.remote.
    soak_agent); ("systemd", None) or ("nohup", pid)."""
    if systemd_usable():
        subprocess.run(systemd_argv(unit, argv, directory), check=True, timeout=30,
                       capture_output=True)
        return "systemd", None
    with (directory / LOG).open("ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True,
                                cwd=directory, close_fds=True)
    return "nohup", proc.pid


def alive(pid: int | None) -> bool:
    """The pid runs and is our agent (a reused pid is someone else's process)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (ProcessLookupError, PermissionError, FileNotFoundError):
        return False
    if b"harness.remote.agent" not in cmdline:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] != "Z"  # a zombie has finished


def terminate(pid: int, wait: float, running: Callable[[int], bool] | None = None) -> bool:
    """TERM the phase's process group (its own session: setsid or the systemd unit), and
    CONT so a stopped one acts on it (as systemd does), KILL after `wait` s; True when it
    is gone. `running`: whether the pid is still the process meant (default: this agent's
    phase; G4's soak passes its own)."""
    running = running or alive
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return True
    send = os.killpg if group == pid else os.kill
    for sigs, grace in (((signal.SIGTERM, signal.SIGCONT), wait), ((signal.SIGKILL,), 5.0)):
        try:
            for sig in sigs:
                send(pid, sig)
        except ProcessLookupError:
            return True
        end = time.monotonic() + grace
        while time.monotonic() < end:
            if not running(pid):
                return True
            time.sleep(0.05)
    return not running(pid)


def log_tail(directory: Path, lines: int = 5) -> str:
    path = directory / LOG
    if not path.is_file():
        return ""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 4096))
        text = f.read().decode("utf-8", "replace")
    return " | ".join(text.strip().splitlines()[-lines:])
