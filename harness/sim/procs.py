"""Process helpers for the simulator's background processes (engines, the spawner).

Why pid + start ticks: a pid kept in a file may belong to an unrelated process after a
crash and a reboot-free pid wrap; /proc's start time tells them apart, so a stop never
signals a stranger.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def start_ticks(pid: int) -> int:
    """Field 22 of /proc/PID/stat: the process's start time (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, ticks: int = 0) -> bool:
    """Running, not a zombie, and (ticks != 0) the same process; our own exited child is
    reaped on the way."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()
    return state[0] != "Z" and (ticks == 0 or int(state[19]) == ticks)


def terminate(pid: int, ticks: int, grace: float) -> bool:
    """SIGTERM, `grace` s, then SIGKILL and 5 s; False only if it survived both."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid, ticks):
                return True
            time.sleep(0.01)
    return False


def log_tail(log: Path, lines: int = 3) -> str:
    """The last lines of a log on one line, for an error message that names the log."""
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) + f" (log: {log})"
