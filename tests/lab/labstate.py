"""Lab bookkeeping: running setup commands, undoing what a lab made, reaping dead labs.

Why apart from netlab: a lab records everything it creates (namespaces, links, routes,
the user, the sudoers file) in /tmp/gate-netlab/<id>.json as it goes, so the same undo
code tears down a lab at the end of a test and one left behind by a killed run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

STATE_DIR = Path("/tmp/gate-netlab")
SSHD = "/usr/sbin/sshd"


def skip_reason() -> str | None:
    """Why the lab cannot run here (None when it can): root, `ip netns` and sshd are needed."""
    if os.geteuid() != 0:
        return "the SSH lab needs root (network namespaces)"
    for tool in ("ip", "ssh-keygen", "useradd", "userdel", "chpasswd"):
        if shutil.which(tool) is None:
            return f"the SSH lab needs `{tool}` (apt-get install iproute2 openssh-server passwd)"
    if not Path(SSHD).exists():
        return "the SSH lab needs sshd (apt-get install -y openssh-server)"
    probe = f"glprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"network namespaces are not available here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def run_cmd(argv: Sequence[str], *, check: bool = True, ns: str | None = None,
         input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    done = subprocess.run(full, capture_output=True, text=True, input=input_text, timeout=60)
    if check and done.returncode != 0:
        raise RuntimeError(f"lab setup: {' '.join(full)} failed: {done.stderr.strip()}")
    return done


@contextlib.contextmanager
def accounts_locked() -> Iterator[None]:
    """useradd / userdel of labs built at the same time (pytest-xdist workers) one at a time:
    shadow's tools refuse ("cannot lock /etc/passwd") rather than wait for each other."""
    STATE_DIR.mkdir(mode=0o755, exist_ok=True)
    with open(STATE_DIR / ".accounts.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def undo(kind: str, name: str) -> None:
    if kind == "netns":
        for pid in run_cmd(["ip", "netns", "pids", name], check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        run_cmd(["ip", "netns", "del", name], check=False)
    elif kind == "link":
        run_cmd(["ip", "link", "del", name], check=False)
    elif kind == "route":
        run_cmd(["ip", "route", "del", "unreachable", name], check=False)
    elif kind == "user":
        with accounts_locked():
            run_cmd(["userdel", name], check=False)
    elif kind == "file":
        Path(name).unlink(missing_ok=True)


def reap_stale() -> list[str]:
    """Remove labs whose owning process is gone (a killed test run); returns their ids."""
    reaped = []
    for rec in STATE_DIR.glob("*.json") if STATE_DIR.exists() else []:
        try:
            state = json.loads(rec.read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError):
            continue
        if _alive(pid):
            continue
        for kind, name in reversed(state.get("made", [])):
            with contextlib.suppress(Exception):
                undo(kind, name)
        if state.get("root"):
            shutil.rmtree(state["root"], ignore_errors=True)
        rec.unlink(missing_ok=True)
        reaped.append(rec.stem)
    return reaped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
