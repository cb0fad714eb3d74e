"""LocalTransport: the Transport contract on this machine, through subprocess.

Why not subprocess.run: stdout and stderr must be drained together under a cap, stdin fed
without blocking, and on timeout the whole process group killed, exactly as over SSH.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from harness.errors import AuthError, CommandTimeoutError, TransportError
from harness.transport import command
from harness.transport.result import DEFAULT_OUTPUT_CAP, CommandResult, OutputBuffer, describe

log = logging.getLogger("harness.transport")
_CHUNK = 1 << 16


class LocalTransport:
    """Commands on this host. sudo is skipped when already root (as Ansible's become is)."""

    def __init__(self, host: str = "local", *, sudo_password: str | None = None,
                 output_cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.host = host
        self._sudo_password = sudo_password
        self.output_cap = output_cap

    def __repr__(self) -> str:
        return f"LocalTransport({self.host!r})"

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        words = command.validate_argv(argv)
        need_sudo = sudo and os.geteuid() != 0
        if need_sudo:
            remote = command.build(words, env=env, sudo=True,
                                   password=self._sudo_password is not None, pid_marker=False)
            popen_argv = ["sh", "-c", remote.line]
            full_env = None
        else:
            remote = command.RemoteCommand(line="", pid_marker=None, prompt=None, go=None)
            popen_argv = list(words)
            command.env_words(env)  # same name checks as over SSH
            full_env = {**os.environ, **env} if env else None
        log.debug("%s: run %s", self.host, describe(words, sudo=sudo))
        started, t0 = time.time(), time.monotonic()
        try:
            proc = subprocess.Popen(popen_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=full_env,
                                    start_new_session=True)
        except OSError as exc:
            return CommandResult(self.host, words, 127, "", f"{words[0]}: {exc.strerror}",
                                 started, time.monotonic() - t0)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        out, err = OutputBuffer(self.output_cap), OutputBuffer(self.output_cap)
        failed_auth = self._drive(proc, command.Preamble(remote), data, out, err,
                                  timeout, words, sudo)
        rc = proc.wait()
        if failed_auth:
            raise AuthError("sudo refused the password", host=self.host,
                            command=describe(words, sudo=True), stage="sudo")
        return CommandResult(self.host, words, rc, out.text(), err.text(), started,
                             time.monotonic() - t0, out.truncated or err.truncated)

    def _drive(self, proc: subprocess.Popen[bytes], pre: command.Preamble, data: bytes,
               out: OutputBuffer, err: OutputBuffer, timeout: float,
               words: tuple[str, ...], sudo: bool) -> bool:
        """Pump stdin / stdout / stderr until both outputs close; returns 'sudo auth failed'."""
        assert proc.stdin and proc.stdout and proc.stderr
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        deadline = time.monotonic() + timeout
        pending: bytes | None = None  # None: not yet allowed to write stdin
        auth_failed = False
        open_streams = 2

        def act(actions: list[str]) -> None:
            nonlocal pending, auth_failed
            for a in actions:
                if a == command.SEND_PASSWORD and self._sudo_password is not None:
                    proc.stdin.write((self._sudo_password + "\n").encode())  # type: ignore[union-attr]
                    proc.stdin.flush()  # type: ignore[union-attr]
                elif a == command.AUTH_FAILED:
                    auth_failed = True
                    pending = b""
                elif a == command.SEND_STDIN and pending is None:
                    pending = data

        act(pre.start_actions())
        try:
            while open_streams:
                if pending is not None and proc.stdin and not proc.stdin.closed:
                    if pending:
                        with contextlib.suppress(BrokenPipeError):
                            written = os.write(proc.stdin.fileno(), pending[:_CHUNK])
                            pending = pending[written:]
                    if not pending:
                        with contextlib.suppress(BrokenPipeError):
                            proc.stdin.close()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._kill(proc)
                    raise CommandTimeoutError(
                        f"timed out after {timeout:g}s and was killed", host=self.host,
                        command=describe(words, sudo=sudo), stage="run")
                wait = 0.01 if pending else min(remaining, 0.5)
                for key, _ in sel.select(wait):
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        open_streams -= 1
                        continue
                    if key.data is err:
                        chunk, actions = pre.feed(chunk)
                        act(actions)
                    key.data.feed(chunk)
            err.feed(pre.flush())
        finally:
            sel.close()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    if stream:
                        stream.close()
        return auth_failed

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=2)
                return
            except subprocess.TimeoutExpired:
                continue

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        return self.run(["sh", "-c", script], timeout=timeout, sudo=sudo)

    def put(self, local: Path, remote: str) -> None:
        try:
            shutil.copyfile(local, remote)
        except OSError as exc:
            raise TransportError(f"cannot copy {local} to {remote}: {exc.strerror}",
                                 host=self.host, stage="put") from None

    def get(self, remote: str, local: Path) -> None:
        try:
            shutil.copyfile(remote, local)
        except OSError as exc:
            raise TransportError(f"cannot copy {remote} to {local}: {exc.strerror}",
                                 host=self.host, stage="get") from None

    def read_file(self, remote: str) -> bytes:
        try:
            return Path(remote).read_bytes()
        except OSError as exc:
            raise TransportError(f"cannot read {remote}: {exc.strerror}", host=self.host,
                                 stage="read_file") from None

    def close(self) -> None:
        return None

    def __enter__(self) -> LocalTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
