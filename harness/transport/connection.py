"""Open one authenticated paramiko Transport to an Endpoint: jump hops, host key, auth.

Why separate from running commands: connecting is the only place that retries (bounded,
with backoff, and only when the host did not answer), and every failure here must come
out as one of the distinct errors a user can act on: unreachable, host key, auth. A host
that is silent (a dropped SYN, a port that accepts and never sends an SSH banner) is said
while it is waited for, with what is awaited and for how long (a warning after
PATIENCE_S), so a connect never looks like a hung gate.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from harness.errors import AuthError, UnreachableError
from harness.transport.endpoint import Endpoint
from harness.transport.hostkeys import KnownHosts

log = logging.getLogger("harness.transport")

WINDOW = 16 * 1024 * 1024  # bigger than paramiko's 2 MiB: bulk output flows faster
DEFAULT_IDENTITIES = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
PASSPHRASE_ENV = "GATE_SSH_PASSPHRASE"
TCP_USER_TIMEOUT_MS = 45_000  # unacknowledged data for this long: the link is gone
PATIENCE_S = 2.0  # a connect step slower than this (or half its wait) is said


@dataclass(frozen=True)
class ConnectOptions:
    known_hosts: KnownHosts
    connect_timeout: float = 10.0
    keepalive: int = 15
    attempts: int = 3
    backoff: float = 0.5
    allow_agent: bool = True
    prompt: Callable[[str], str] | None = None  # asks for a key passphrase (a TTY only)


@dataclass
class Connection:
    """The transport to the target plus the jump transports it rides on (closed together)."""

    transport: paramiko.Transport
    auth_method: str
    hops: list[paramiko.Transport] = field(default_factory=list)

    def close(self) -> None:
        for t in [self.transport, *reversed(self.hops)]:
            with contextlib.suppress(Exception):
                t.close()

    @property
    def active(self) -> bool:
        return self.transport.is_active() and all(t.is_active() for t in self.hops)


@dataclass(frozen=True)
class Attempt:
    """Which connect attempt this is (said while a silent host is waited for)."""

    number: int = 1
    of: int = 1

    def words(self) -> str:
        return f"attempt {self.number} of {self.of}" if self.of > 1 else "one attempt"


@contextlib.contextmanager
def patience(ep: Endpoint, awaited: Callable[[], str], seconds: float,
             attempt: Attempt) -> Iterator[None]:
    """While the block runs: after PATIENCE_S (or half the wait, if shorter), a warning
    naming the host, what it has not done yet (`awaited()`, worded when said) and how
    long it is waited for at most."""
    def say() -> None:
        log.warning("%s: %s; waiting up to %g s (%s)", ep.name, awaited(), seconds,
                    attempt.words())

    timer = threading.Timer(min(PATIENCE_S, seconds / 2), say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def open_connection(ep: Endpoint, opts: ConnectOptions) -> Connection:
    """Connect, retrying only while the host does not answer (attempts, doubling backoff).
    The last failure says how often and how long the host was tried."""
    delay = opts.backoff
    began = time.monotonic()
    for attempt in range(1, opts.attempts + 1):
        log.debug("%s: connecting to %s:%d (up to %g s, %s)", ep.name, ep.hostname, ep.port,
                  opts.connect_timeout, Attempt(attempt, opts.attempts).words())
        try:
            conn = _open(ep, opts, Attempt(attempt, opts.attempts))
        except UnreachableError as exc:
            if attempt == opts.attempts:
                if attempt == 1:
                    raise
                raise UnreachableError(
                    f"{exc.message} ({attempt} attempts in {time.monotonic() - began:.0f} s)",
                    host=exc.host, stage=exc.stage, hint=exc.hint) from None
            log.info("%s: %s; retrying in %.1fs (attempt %d of %d)", ep.name, exc.message,
                     delay, attempt + 1, opts.attempts)
            time.sleep(delay)
            delay *= 2
            continue
        log.debug("%s: connected (%s) in %.2f s", ep.name, conn.auth_method,
                  time.monotonic() - began)
        return conn
    raise AssertionError("unreachable")


def _open(ep: Endpoint, opts: ConnectOptions, attempt: Attempt = Attempt()) -> Connection:
    hops: list[paramiko.Transport] = []
    try:
        via: paramiko.Transport | None = None
        for hop in ep.jumps:
            inner = _open(hop, opts, attempt) if via is None and hop.jumps else None
            if inner is not None:
                hops += [*inner.hops, inner.transport]
                via = inner.transport
                continue
            sock = open_socket(hop, via, opts, through=None, attempt=attempt)
            t, _ = _handshake(hop, sock, opts, attempt)
            hops.append(t)
            via = t
        sock = open_socket(ep, via, opts, through=ep.jumps[-1] if ep.jumps else None,
                           attempt=attempt)
        t, method = _handshake(ep, sock, opts, attempt)
        return Connection(t, method, hops)
    except BaseException:
        for t in reversed(hops):
            with contextlib.suppress(Exception):
                t.close()
        raise


class QuickAckSocket(socket.socket):
    """A TCP socket that acknowledges every read at once (TCP_QUICKACK after each recv).

    Why: through a jump host, the jump's sshd forwards the target's packets one small write
    at a time without TCP_NODELAY; Nagle then waits for our delayed ACK (40 ms) before the
    exit status of every command. Acking at once took a command from ~42 ms to ~6 ms.
    """

    @classmethod
    def wrap(cls, sock: socket.socket) -> QuickAckSocket:
        timeout = sock.gettimeout()
        quick = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        quick.settimeout(timeout)
        return quick

    def recv(self, size: int, flags: int = 0) -> bytes:
        data = super().recv(size, flags)
        with contextlib.suppress(OSError):
            self.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        return data


_QUICKACK = getattr(socket, "TCP_QUICKACK", 12)
Sock = socket.socket | paramiko.Channel | paramiko.ProxyCommand


def open_socket(ep: Endpoint, via: paramiko.Transport | None, opts: ConnectOptions,
                through: Endpoint | None, attempt: Attempt = Attempt()) -> Sock:
    wait = opts.connect_timeout
    if via is not None:
        jump = through.label() if through else "the jump host"
        try:
            with patience(ep, lambda: f"{jump} has not yet reached {ep.hostname}:{ep.port}",
                          wait, attempt):
                return via.open_channel("direct-tcpip", (ep.hostname, ep.port),
                                        ("127.0.0.1", 0), timeout=wait)
        except paramiko.ChannelException as exc:
            raise UnreachableError(
                f"jump host {through.label() if through else '?'} cannot reach "
                f"{ep.hostname}:{ep.port}: {exc.text}", host=ep.name, stage="connect via jump"
            ) from None
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise UnreachableError(f"jump host connection failed: {exc or type(exc).__name__}",
                                   host=ep.name, stage="connect via jump") from None
    if ep.proxy_command:
        try:
            return paramiko.ProxyCommand(ep.proxy_command)
        except (OSError, paramiko.SSHException) as exc:
            raise UnreachableError(f"ProxyCommand failed: {exc}", host=ep.name,
                                   stage="connect") from None
    try:
        with patience(ep, lambda: f"{ep.hostname}:{ep.port} has not answered the TCP "
                              "connect yet", wait, attempt):
            sock = socket.create_connection((ep.hostname, ep.port), timeout=wait)
    except OSError as exc:
        reason = f"no answer in {wait:g} s" if isinstance(exc, TimeoutError) else (
            exc.strerror or str(exc))
        raise UnreachableError(f"cannot connect to {ep.hostname}:{ep.port}: {reason}",
                               host=ep.name, stage="connect",
                               hint="check the address / port in the inventory, that sshd "
                                    "runs and that no firewall drops the port") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, TCP_USER_TIMEOUT_MS)
    return QuickAckSocket.wrap(sock) if hasattr(socket, "TCP_QUICKACK") else sock


def server_key(t: paramiko.Transport, ep: Endpoint) -> paramiko.PKey:
    """The key the host presented. start_client can return on a transport that died
    meanwhile (a port that accepts and never sends an SSH banner): that host is
    unreachable by SSH, not a bug."""
    try:
        return t.get_remote_server_key()
    except paramiko.SSHException:
        raise UnreachableError(f"SSH handshake with {ep.hostname}:{ep.port} failed: no SSH "
                               "banner before the connection closed", host=ep.name,
                               stage="handshake",
                               hint="check that sshd listens on that port") from None


def no_banner(ep: Endpoint, waited: float, limit: float) -> UnreachableError:
    """A port that accepted the TCP connection and sent no SSH banner: silent for the
    whole wait, or closed at once (another service, a dead sshd)."""
    how = (f"sent no SSH banner in {limit:g} s" if waited >= 0.9 * limit
           else "closed it without an SSH banner")
    return UnreachableError(f"{ep.hostname}:{ep.port} accepted the connection but {how}",
                            host=ep.name, stage="handshake",
                            hint="check that sshd, not another service, listens on that port")


def silent(t: paramiko.Transport, ep: Endpoint) -> str:
    """What the SSH handshake still waits for, worded for the operator."""
    if not t.remote_version:
        return f"{ep.hostname}:{ep.port} accepted the connection but has sent no SSH banner"
    return f"{ep.hostname}:{ep.port} ({t.remote_version}) has not finished the key exchange"


def _handshake(ep: Endpoint, sock: Sock, opts: ConnectOptions,
               attempt: Attempt = Attempt()) -> tuple[paramiko.Transport, str]:
    t = paramiko.Transport(sock, default_window_size=WINDOW)
    try:
        t.banner_timeout = opts.connect_timeout
        t.handshake_timeout = opts.connect_timeout
        t.auth_timeout = opts.connect_timeout
        preferred = opts.known_hosts.preferred_algorithms(ep.hostname, ep.port)
        if preferred:
            sec = t.get_security_options()
            sec.key_types = [a for a in preferred if a in sec.key_types] + [
                a for a in sec.key_types if a not in preferred]
        began = time.monotonic()
        try:
            with patience(ep, lambda: silent(t, ep), opts.connect_timeout, attempt):
                t.start_client(timeout=opts.connect_timeout)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if not t.remote_version and "banner" in str(exc):
                raise no_banner(ep, time.monotonic() - began, opts.connect_timeout) from None
            raise UnreachableError(f"SSH handshake with {ep.hostname}:{ep.port} failed: "
                                   f"{exc or type(exc).__name__}", host=ep.name,
                                   stage="handshake") from None
        if not t.remote_version:  # start_client gave up waiting: no banner in time
            raise no_banner(ep, time.monotonic() - began, opts.connect_timeout)
        opts.known_hosts.verify(ep.name, ep.hostname, ep.port, server_key(t, ep))
        method = _authenticate(t, ep, opts)
        t.set_keepalive(opts.keepalive)
        return t, method
    except BaseException:
        t.close()
        raise


def _authenticate(t: paramiko.Transport, ep: Endpoint, opts: ConnectOptions) -> str:
    """Key files first (the inventory's, then ~/.ssh/config's), then the agent."""
    tried: list[str] = []
    files = list(ep.key_files) or [str(Path(p).expanduser()) for p in DEFAULT_IDENTITIES
                                   if Path(p).expanduser().is_file()]
    for path in files:
        key = _load_key(path, ep, opts, explicit=bool(ep.key_files))
        if key is None:
            continue
        tried.append(f"key {path}")
        if _try_key(t, ep, key):
            return f"publickey ({path})"
    if opts.allow_agent and os.environ.get("SSH_AUTH_SOCK"):
        agent = paramiko.Agent()
        try:
            for key in agent.get_keys():
                tried.append(f"agent key {key.get_name()}")
                if _try_key(t, ep, key):
                    return "publickey (agent)"
        finally:
            agent.close()
    raise AuthError(
        f"{ep.hostname} refused user {ep.user!r}: tried {', '.join(tried) or 'no keys'}",
        host=ep.name, stage="auth",
        hint="check ansible_user / ansible_ssh_private_key_file in the inventory, that the "
             "public key is in the user's authorized_keys, or load the key into ssh-agent")


def _try_key(t: paramiko.Transport, ep: Endpoint, key: paramiko.PKey) -> bool:
    try:
        t.auth_publickey(ep.user, key)
    except paramiko.BadAuthenticationType as exc:
        raise AuthError(f"{ep.hostname} does not accept public keys (allows: "
                        f"{', '.join(exc.allowed_types)})", host=ep.name, stage="auth") from None
    except paramiko.AuthenticationException:
        return False
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise UnreachableError(f"connection lost during authentication: {exc}",
                               host=ep.name, stage="auth") from None
    return t.is_authenticated()


def _load_key(path: str, ep: Endpoint, opts: ConnectOptions,
              explicit: bool) -> paramiko.PKey | None:
    p = Path(path)
    if not p.is_file():
        if explicit:
            raise AuthError(f"key file {path} does not exist", host=ep.name, stage="auth",
                            hint="fix ansible_ssh_private_key_file in the inventory")
        return None
    mode = p.stat().st_mode & 0o777
    if mode & 0o077:
        raise AuthError(f"key file {path} is readable by others (mode {mode:o}); OpenSSH "
                        "and Ansible refuse it", host=ep.name, stage="auth",
                        hint=f"chmod 600 {path}")
    passphrase = os.environ.get(PASSPHRASE_ENV)
    try:
        return paramiko.PKey.from_path(p, passphrase)
    except paramiko.PasswordRequiredException:
        prompt = opts.prompt or (_tty_prompt if sys.stdin.isatty() else None)
        if prompt is None:
            raise AuthError(f"key file {path} is encrypted", host=ep.name, stage="auth",
                            hint=f"set {PASSPHRASE_ENV} or load the key into ssh-agent "
                                 "(unattended runs: use an agent)") from None
        try:
            return paramiko.PKey.from_path(p, prompt(f"Passphrase for {path}: "))
        except paramiko.SSHException as exc:
            raise AuthError(f"cannot unlock key file {path}: {exc}", host=ep.name,
                            stage="auth") from None
    except (paramiko.SSHException, ValueError, OSError) as exc:
        raise AuthError(f"cannot load key file {path}: {exc}", host=ep.name,
                        stage="auth") from None


def _tty_prompt(text: str) -> str:
    return getpass.getpass(text)
