"""The client side of harness.sim.spawner: ask it to fork an engine, start and stop it.

Kept apart from the server so that `python -m harness.sim.control` (run for every arm
action) imports only this: a socket, JSON and a fork request, not the engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.errors import GateError, InfrastructureError, UsageError
from harness.sim.procs import log_tail, terminate

VERSION = 1
MAX_LINE = 1 << 16  # bytes of one request or answer
SUN_PATH_MAX = 107  # bytes of an AF_UNIX socket path (sun_path without its NUL)


class SpawnerError(InfrastructureError):
    """The spawner did not answer, or refused the request."""


def ask(sock_path: Path, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
    """One request, one answer (a dict with ok true); SpawnerError otherwise."""
    where = checked_path(sock_path, SpawnerError)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(where)
            s.sendall(json.dumps({"v": VERSION, **request}).encode() + b"\n")
            line = read_line(s)
    except OSError as exc:
        raise SpawnerError(f"no answer: {exc}", file=where) from None
    try:
        answer = json.loads(line)
    except ValueError:
        raise SpawnerError(f"unreadable answer {line[:80]!r}", file=where) from None
    if not isinstance(answer, dict) or answer.get("v") != VERSION:
        raise SpawnerError(f"not a version {VERSION} answer: {line[:80]!r}", file=where)
    if answer.get("ok") is not True:
        raise SpawnerError(f"refused: {answer.get('error')}", file=where)
    return answer


def spawn(sock_path: Path, argv: list[str], log: Path, timeout: float = 5.0) -> int:
    """Fork `python -m harness.sim ARGV` from the spawner, output appended to `log`; its pid."""
    try:
        cwd = os.getcwd()
    except OSError as exc:
        raise SpawnerError(f"no working directory: {exc}") from None
    answer = ask(sock_path, {"op": "spawn", "argv": argv, "log": str(Path(log).absolute()),
                             "cwd": cwd, **origin()}, timeout)
    pid = answer.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise SpawnerError(f"answered no pid: {answer}", file=str(sock_path))
    return pid


def exit_code(sock_path: Path, pid: int) -> int | None:
    """The exit code of a child the spawner reaped (negative: killed by that signal);
    None when it is running, was not its child, or nothing answers."""
    with contextlib.suppress(SpawnerError):
        code = ask(sock_path, {"op": "status", "pid": pid}, timeout=2.0).get("code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    return None


def start_spawner(sock_path: Path, log: Path, idle_exit: float | None = None,
                  timeout: float = 15.0) -> int:
    """Start a detached spawner (its own session) and wait until it answers; its pid."""
    argv = [sys.executable, "-m", "harness.sim.spawner", "--socket", str(sock_path)]
    if idle_exit is not None:
        argv += ["--idle-exit", repr(idle_exit)]
    checked_path(sock_path, UsageError)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise SpawnerError(f"the spawner exited with code {code}: {log_tail(log)}",
                               stage="sim spawner", command=" ".join(argv))
        with contextlib.suppress(SpawnerError):
            if ask(sock_path, {"op": "ping"}, timeout=1.0).get("pid") == proc.pid:
                return proc.pid
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    raise SpawnerError(f"the spawner did not answer within {timeout:g} s: {log_tail(log)}",
                       stage="sim spawner", command=" ".join(argv))


def stop_spawner(sock_path: Path, grace: float = 5.0) -> bool:
    """SIGTERM the spawner serving at `sock_path` (SIGKILL after `grace`); its engines keep
    running. False when nothing answered there."""
    try:
        pid = ask(sock_path, {"op": "ping"}, timeout=2.0).get("pid")
    except SpawnerError:
        return False
    if not isinstance(pid, int) or pid <= 0:
        return False
    if terminate(pid, 0, grace):
        return True
    raise SpawnerError(f"the spawner (pid {pid}) survived SIGKILL", file=str(sock_path))


def origin() -> dict[str, str]:
    """Who is asking: a spawner of another interpreter or checkout must not serve it."""
    import harness

    return {"python": sys.executable, "harness": os.path.dirname(harness.__file__ or "")}


def checked_path(sock_path: Path, error: type[GateError]) -> str:
    where = str(sock_path)
    if len(os.fsencode(where)) > SUN_PATH_MAX:
        raise error(f"socket path longer than {SUN_PATH_MAX} bytes (AF_UNIX)", file=where,
                    hint="use a shorter path, e.g. under /tmp")
    return where


def read_line(s: socket.socket) -> bytes:
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed before a whole line")
        buf += chunk
        if len(buf) > MAX_LINE:
            raise ConnectionError(f"line longer than {MAX_LINE} bytes")
    return buf.split(b"\n", 1)[0]
