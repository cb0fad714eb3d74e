"""SSHTransport: the Transport contract over one reused paramiko connection per host.

Why this shape: gates run thousands of short commands for hours, so the connection is
opened once (lazily, with bounded retries) and reopened only after it broke. Each command
gets its own channel, stdout and stderr are drained together (no deadlock at any size)
under a cap, and a command past its timeout is killed on the host, not left running.
"""

from __future__ import annotations

import contextlib
import io
import logging
import select
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import paramiko

from harness.errors import AuthError, CommandTimeoutError, TransportError, UnreachableError
from harness.transport import command
from harness.transport.connection import Connection, ConnectOptions, open_connection
from harness.transport.endpoint import Endpoint
from harness.transport.result import DEFAULT_OUTPUT_CAP, CommandResult, OutputBuffer, describe

log = logging.getLogger("harness.transport")
_CHUNK = 1 << 20
KILL_TIMEOUT = 10.0
# A file transfer that receives nothing for this long has lost its host (a cut link): it
# fails and the connection is dropped, so the next call reconnects. Without it an SFTP
# read waits on the kernel's TCP_USER_TIMEOUT, and a G4 viewer reading a storage host's
# counters stalls with it.
FILE_IDLE_TIMEOUT = 20.0


class SSHTransport:
    """Commands on one SSH host. Thread-safe: several threads may run commands at once."""

    def __init__(self, endpoint: Endpoint, options: ConnectOptions, *,
                 sudo_password: str | None = None,
                 output_cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.host = endpoint.name
        self.endpoint = endpoint
        self.options = options
        self.output_cap = output_cap
        self._sudo_password = sudo_password
        self._conn: Connection | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SSHTransport({self.host!r}, {self.endpoint.label()})"

    # ---- connection -------------------------------------------------------------------

    def connect(self) -> Connection:
        """The live connection, opened (or reopened after a break) on first use."""
        with self._lock:
            if self._conn is not None and self._conn.active:
                return self._conn
            if self._conn is not None:
                log.info("%s: connection lost; reconnecting", self.host)
                self._drop()
            self._conn = open_connection(self.endpoint, self.options)
            return self._conn

    @property
    def auth_method(self) -> str:
        return self.connect().auth_method

    def _drop(self) -> None:
        if self._sftp is not None:
            with contextlib.suppress(Exception):
                self._sftp.close()
            self._sftp = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> SSHTransport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---- commands ---------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout: float = 60, sudo: bool = False,
            env: Mapping[str, str] | None = None,
            stdin: str | bytes | None = None) -> CommandResult:
        words = command.validate_argv(argv)
        remote = command.build(words, env=env, sudo=sudo,
                               password=sudo and self._sudo_password is not None)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        return self._execute(words, remote, data, timeout, sudo)

    def run_shell(self, script: str, *, timeout: float = 60, sudo: bool = False) -> CommandResult:
        return self.run(["sh", "-c", script], timeout=timeout, sudo=sudo)

    def _execute(self, words: tuple[str, ...], remote: command.RemoteCommand, data: bytes,
                 timeout: float, sudo: bool) -> CommandResult:
        shown = describe(words, sudo=sudo)
        conn = self.connect()
        log.debug("%s: run %s", self.host, shown)
        started, t0 = time.time(), time.monotonic()
        try:
            chan = conn.transport.open_session(timeout=min(timeout, self.options.connect_timeout))
            chan.exec_command(remote.line)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._broken()
            raise UnreachableError(f"cannot start the command: {exc or type(exc).__name__}",
                                   host=self.host, command=shown, stage="open channel") from None
        out, err = OutputBuffer(self.output_cap), OutputBuffer(self.output_cap)
        pre = command.Preamble(remote)
        try:
            auth_failed = self._pump(chan, conn, pre, data, out, err, t0 + timeout, shown)
            if auth_failed:
                raise AuthError("sudo refused the password", host=self.host, command=shown,
                                stage="sudo")
            rc = chan.recv_exit_status() if chan.exit_status_ready() else -1
        except _Deadline:
            self._on_timeout(chan, pre.pid, sudo, timeout, shown)
            raise AssertionError("unreachable") from None
        finally:
            chan.close()
        return CommandResult(self.host, words, rc, out.text(), err.text(), started,
                             time.monotonic() - t0, out.truncated or err.truncated)

    def _pump(self, chan: paramiko.Channel, conn: Connection, pre: command.Preamble,
              data: bytes, out: OutputBuffer, err: OutputBuffer, deadline: float,
              shown: str) -> bool:
        """Move bytes until the command exited and both streams are drained."""
        pending: bytes | None = None  # None: stdin may not be sent yet
        auth_failed = False
        fd = chan.fileno()

        def act(actions: list[str]) -> None:
            nonlocal pending, auth_failed
            for a in actions:
                if a == command.SEND_PASSWORD and self._sudo_password is not None:
                    chan.sendall((self._sudo_password + "\n").encode())
                elif a == command.AUTH_FAILED:
                    auth_failed, pending = True, b""
                elif a == command.SEND_STDIN and pending is None:
                    pending = data

        act(pre.start_actions())
        stdin_open = True
        while True:
            if pending is not None and stdin_open:
                if pending and chan.send_ready():
                    pending = pending[chan.send(pending[:_CHUNK]):]
                if not pending:
                    chan.shutdown_write()
                    stdin_open = False
            while chan.recv_ready():
                out.feed(chan.recv(_CHUNK))
            while chan.recv_stderr_ready():
                chunk, actions = pre.feed(chan.recv_stderr(_CHUNK))
                err.feed(chunk)
                act(actions)
            drained = not chan.recv_ready() and not chan.recv_stderr_ready()
            if chan.eof_received and drained and (chan.exit_status_ready() or chan.closed):
                break
            if not conn.active:
                self._broken()
                raise UnreachableError("connection lost while the command ran", host=self.host,
                                       command=shown, stage="run")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Deadline
            if chan.eof_received:
                chan.status_event.wait(min(remaining, 0.05))
            else:
                select.select([fd], [], [], 0.005 if pending else min(remaining, 0.5))
        err.feed(pre.flush())
        return auth_failed

    def _on_timeout(self, chan: paramiko.Channel, pid: int | None, sudo: bool,
                    timeout: float, shown: str) -> None:
        with contextlib.suppress(Exception):
            chan.close()
        if pid is None:
            raise CommandTimeoutError(
                f"timed out after {timeout:g}s before it started; it may still run",
                host=self.host, command=shown, stage="run")
        try:
            self.run_shell(command.kill_script(pid), timeout=KILL_TIMEOUT, sudo=sudo)
        except TransportError as exc:
            self._broken()
            raise UnreachableError(
                f"no answer for {timeout:g}s and the host does not respond ({exc.message})",
                host=self.host, command=shown, stage="run",
                hint="the link or the host went down; the command may still run there") from None
        raise CommandTimeoutError(f"timed out after {timeout:g}s; killed its process group {pid}",
                                  host=self.host, command=shown, stage="run")

    def _broken(self) -> None:
        """Forget a connection that failed, so the next command reconnects."""
        with self._lock:
            self._drop()

    # ---- files ------------------------------------------------------------------------

    def _sftp_client(self) -> paramiko.SFTPClient:
        conn = self.connect()
        with self._lock:
            if self._sftp is None:
                try:
                    self._sftp = paramiko.SFTPClient.from_transport(conn.transport)
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    raise TransportError(f"SFTP is not available: {exc}", host=self.host,
                                         stage="sftp") from None
                if self._sftp is None:
                    raise TransportError("SFTP is not available", host=self.host, stage="sftp")
                channel = self._sftp.get_channel()
                if channel is not None:
                    channel.settimeout(FILE_IDLE_TIMEOUT)
            return self._sftp

    def _lost(self, exc: OSError) -> None:
        """A transfer that timed out or lost its socket: reconnect next time (a missing
        file or a refused path keeps the connection)."""
        if exc.errno is None or isinstance(exc, TimeoutError | ConnectionError):
            self._broken()

    def put(self, local: Path, remote: str) -> None:
        try:
            self._sftp_client().put(str(local), remote)
        except OSError as exc:
            self._lost(exc)
            raise TransportError(f"cannot upload {local} to {remote}: {exc}", host=self.host,
                                 stage="put") from None

    def get(self, remote: str, local: Path) -> None:
        try:
            self._sftp_client().get(remote, str(local))
        except OSError as exc:
            self._lost(exc)
            raise TransportError(f"cannot download {remote}: {exc}", host=self.host,
                                 stage="get") from None

    def read_file(self, remote: str) -> bytes:
        buf = io.BytesIO()
        try:
            self._sftp_client().getfo(remote, buf)
        except OSError as exc:
            self._lost(exc)
            raise TransportError(f"cannot read {remote}: {exc}", host=self.host,
                                 stage="read_file") from None
        return buf.getvalue()


class _Deadline(Exception):
    """Internal: the command's timeout passed."""
