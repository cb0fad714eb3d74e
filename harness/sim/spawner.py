"""A pre-imported engine spawner (a zygote): a start or a cold restart costs a fork, not a
new interpreter plus ~0.45 s of imports (aiohttp, prometheus_client, the server).

    python -m harness.sim.spawner --socket PATH [--idle-exit S]

It imports what `python -m harness.sim` imports, then answers one JSON line per connection
on an AF_UNIX socket (mode 0600: its user only), `{"v": 1, "op": ...}` -> `{"v": 1, "ok":
true, ...}` or `{"v": 1, "ok": false, "error": "..."}`; ops: `ping` (-> pid), `spawn` (argv,
log, cwd, python, harness -> pid), `status` (pid -> running, code).

A spawned engine is a new process (a cold restart stays cold: empty GPU cache, counters
from zero, a new start time) in its own session, stdin /dev/null, stdout and stderr
appended to the log, no inherited fds, default signal handlers, running `python -m
harness.sim ARGV` as the interpreter would; it inherits the spawner's environment, not the
caller's. The spawner is single-threaded and never runs an event loop (forking is only
safe that way), reaps its children as they exit (keeping their exit codes for `status`),
and on SIGTERM removes its socket and exits, leaving its engines running.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import stat
import sys
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import click

from harness.errors import GateError, InfrastructureError, UsageError
from harness.sim.spawn_client import (
    VERSION,
    SpawnerError,
    ask,
    checked_path,
    origin,
    read_line,
)

_KEEP_CODES = 1024  # exit codes remembered for `status`
_CONN_TIMEOUT = 2.0  # a client that connects and says nothing cannot hold the loop


# -- server ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    argv: list[str]
    log: str
    cwd: str

    @classmethod
    def parse(cls, req: dict[str, Any]) -> _Job:
        argv, log, cwd = req.get("argv"), req.get("log"), req.get("cwd")
        if not isinstance(argv, list) or not all(isinstance(a, str) and "\0" not in a
                                                 for a in argv):
            raise ValueError("argv must be a list of strings without NUL")
        if not isinstance(log, str) or not os.path.isabs(log) or "\0" in log:
            raise ValueError("log must be an absolute path")
        if not isinstance(cwd, str) or "\0" in cwd or not os.path.isdir(cwd):
            raise ValueError("cwd must be an existing directory")
        return cls(argv, log, cwd)


def preload() -> None:
    """Import everything `python -m harness.sim` imports until it serves (checked with
    -X importtime against a running engine), so that a child only forks."""
    import encodings.idna  # noqa: F401  (aiohttp, at the first request)
    import runpy  # noqa: F401

    import harness.secrets
    import harness.sim.command
    import harness.sim.run
    import harness.sim.server  # noqa: F401

    with contextlib.suppress(ImportError):
        import uvloop  # noqa: F401
    gc.freeze()  # the imported objects stay shared with the children (copy-on-write)
    if threading.active_count() != 1:
        raise InfrastructureError("importing the engine started a thread: forking it is "
                                  "not safe", stage="sim spawner")


class Spawner:
    """The serving loop. Its state is its socket and the children it forked."""

    def __init__(self, sock_path: Path, idle_exit: float | None) -> None:
        self.path = sock_path
        self.idle_exit = idle_exit
        self.children: set[int] = set()
        self.codes: OrderedDict[int, int] = OrderedDict()
        self.stopping = False
        self.listener = _bind(sock_path)
        self.inode = os.stat(sock_path).st_ino
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._stop)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes select: reap

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def serve(self) -> None:
        self._log(f"serving at {self.path} (pid {os.getpid()})")
        last = time.monotonic()
        try:
            while not self.stopping:
                self._reap()
                wait = 1.0
                if self.idle_exit is not None:
                    left = last + self.idle_exit - time.monotonic()
                    if left <= 0:
                        self._log(f"idle for {self.idle_exit:g} s: exiting")
                        break
                    wait = min(wait, left)
                listen = self.listener.fileno()
                ready, _, _ = select.select([listen, self.wake_r], [], [], wait)
                if self.wake_r in ready:
                    with contextlib.suppress(OSError):
                        while os.read(self.wake_r, 512):
                            pass
                if listen in ready and not self.stopping:
                    self._handle_one()
                    last = time.monotonic()
        finally:
            self._close()

    def _handle_one(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        with conn:
            conn.settimeout(_CONN_TIMEOUT)
            try:
                line = read_line(conn)
            except OSError as exc:
                self._log(f"dropped a request: {exc}")
                return
            answer = self._answer(conn, line)
            try:
                conn.sendall(json.dumps(answer).encode() + b"\n")
            except OSError as exc:
                self._log(f"could not answer {answer}: {exc}")

    def _answer(self, conn: socket.socket, line: bytes) -> dict[str, Any]:
        try:
            req = json.loads(line)
        except ValueError:
            return _error("not a JSON line")
        if not isinstance(req, dict):
            return _error("not a JSON object")
        if req.get("v") != VERSION:
            return _error(f"protocol version {req.get('v')!r}; this spawner speaks {VERSION}")
        op = req.get("op")
        if op == "ping":
            return {"v": VERSION, "ok": True, "pid": os.getpid(), "children": len(self.children)}
        if op == "status":
            pid = req.get("pid")
            if not isinstance(pid, int) or isinstance(pid, bool):
                return _error("pid must be an integer")
            self._reap()
            return {"v": VERSION, "ok": True, "running": pid in self.children,
                    "code": self.codes.get(pid)}
        if op == "spawn":
            return self._spawn(conn, req)
        return _error(f"unknown op {op!r}")

    def _spawn(self, conn: socket.socket, req: dict[str, Any]) -> dict[str, Any]:
        try:
            job = _Job.parse(req)
        except ValueError as exc:
            return _error(str(exc))
        mine = origin()
        for key in ("python", "harness"):
            if key in req and req[key] != mine[key]:
                return _error(f"this spawner runs {key} {mine[key]}, the caller {req[key]!r}")
        if threading.active_count() != 1:
            return _error("a thread is running in the spawner: forking is not safe")
        try:
            log_fd = os.open(job.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                             0o644)
        except OSError as exc:
            return _error(f"cannot open the log: {exc}")
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(log_fd)
            return _error(f"fork failed: {exc}")
        if pid == 0:
            self._become_engine(conn, job, log_fd)
        os.close(log_fd)
        self.children.add(pid)
        self.codes.pop(pid, None)
        self._log(f"spawned pid {pid}: {' '.join(job.argv)}")
        return {"v": VERSION, "ok": True, "pid": pid}

    def _become_engine(self, conn: socket.socket, job: _Job, log_fd: int) -> NoReturn:
        """The child: never returns into the spawner's loop, whatever happens."""
        code = 70
        try:
            conn.close()
            self.listener.close()
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as a new interpreter
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the wake pipe, anything inherited
            os.chdir(job.cwd)
            code = _run_engine(job.argv)
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.codes[pid] = os.waitstatus_to_exitcode(status)
            while len(self.codes) > _KEEP_CODES:
                self.codes.popitem(last=False)

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:  # still ours, not a successor's
                os.unlink(self.path)
        self.listener.close()
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)
        self._reap()
        self._log(f"stopped; {len(self.children)} engine(s) left running")

    @staticmethod
    def _log(message: str) -> None:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} spawner: {message}\n")
        sys.stderr.flush()


def _run_engine(argv: list[str]) -> int:
    """`python -m harness.sim ARGV`, with the interpreter's exit-code rules and exit hooks."""
    import atexit
    import runpy

    sys.argv = ["-m", *argv]  # runpy sets argv[0] to __main__.py's path, as -m does
    try:
        runpy.run_module("harness.sim", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    return code


def _error(message: str) -> dict[str, Any]:
    return {"v": VERSION, "ok": False, "error": message}


def _bind(path: Path) -> socket.socket:
    where = checked_path(path, UsageError)
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise UsageError("exists and is not a socket", file=where)
        try:
            ask(path, {"op": "ping"}, timeout=1.0)
        except SpawnerError:
            path.unlink()  # a dead spawner's socket
        else:
            raise UsageError("a spawner already answers here", file=where)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        s.bind(where)
    except OSError as exc:
        s.close()
        raise UsageError(f"cannot listen: {exc.strerror or exc}", file=where) from None
    finally:
        os.umask(old)
    s.listen(64)
    s.setblocking(False)
    return s


# -- command line ----------------------------------------------------------------------
@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--socket", "sock_path", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="AF_UNIX socket to serve (at most 107 bytes).")
@click.option("--idle-exit", type=float, default=None,
              help="Exit after this many seconds without a request [never].")
def cli(sock_path: Path, idle_exit: float | None) -> tuple[Path, float | None]:
    """Pre-imported spawner of simulated engines (python -m harness.sim.control start
    --spawner PATH forks engines from it). SIGTERM: exit, engines keep running."""
    return sock_path, idle_exit


def main(argv: list[str] | None = None) -> None:
    prog = "python -m harness.sim.spawner"
    try:
        parsed = cli.main(args=argv, prog_name=prog, standalone_mode=False)
        if not isinstance(parsed, tuple):  # --help
            sys.exit(parsed if isinstance(parsed, int) else 0)
        sock_path, idle_exit = parsed
        if idle_exit is not None and not idle_exit > 0:
            raise UsageError(f"must be > 0, got {idle_exit}", key="--idle-exit")
        preload()
        Spawner(sock_path, idle_exit).serve()
    except GateError as exc:
        click.echo(f"gate sim spawner: error: {exc.one_line()}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"gate sim spawner: error: {exc.format_message()}", err=True)
        sys.exit(4)


if __name__ == "__main__":
    main()
