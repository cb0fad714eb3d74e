"""`gate hosts trust` and `gate hosts check`: record a host key knowingly, and see per host
whether everything a gate needs works (reachable, auth, host key, sudo, python, latency).

Why: at a site the first hour goes to SSH problems; each problem found here comes with
what to do next, before a gate run fails on it halfway.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko

from harness.config.inventory import HostSpec, Inventory
from harness.errors import (
    AuthError,
    ChangedHostKeyError,
    TransportError,
    UnknownHostKeyError,
    UsageError,
)
from harness.transport.base import Transport, WrappedTransport
from harness.transport.connection import (
    Attempt,
    ConnectOptions,
    no_banner,
    open_connection,
    open_socket,
    patience,
    server_key,
    silent,
)
from harness.transport.endpoint import DEFAULT_SSH_CONFIG, Endpoint, resolve
from harness.transport.hostkeys import KnownHosts
from harness.transport.pool import USER_KNOWN_HOSTS, connect
from harness.transport.ssh import SSHTransport


def trust_host(spec: HostSpec, known_hosts: Path, *, replace: bool = False,
               inventory_hosts: Mapping[str, HostSpec] | None = None,
               ssh_config: Path | None = DEFAULT_SSH_CONFIG,
               user_known_hosts: Path | None = USER_KNOWN_HOSTS,
               connect_timeout: float = 10) -> str:
    """Fetch the host's key and record it in the site known_hosts (TOFU); its fingerprint.

    A host behind a jump host is reached through it, so the jump host must be trusted
    first. A key that differs from the one on record is refused unless `replace`.
    """
    if spec.is_local:
        raise UsageError(f"host {spec.name} uses ansible_connection=local: it has no host key")
    ep = resolve(spec, ssh_config=ssh_config, inventory_hosts=inventory_hosts)
    kh = KnownHosts(site=known_hosts, user=user_known_hosts)
    opts = ConnectOptions(known_hosts=kh, connect_timeout=connect_timeout, attempts=1)
    jump = None
    if ep.jumps:
        last = ep.jumps[-1]
        jump = open_connection(dataclasses.replace(last, jumps=ep.jumps[:-1] or last.jumps),
                               opts)
    try:
        sock = open_socket(ep, jump.transport if jump else None, opts,
                           through=ep.jumps[-1] if ep.jumps else None)
        t = paramiko.Transport(sock)
        try:
            t.banner_timeout = connect_timeout
            began = time.monotonic()
            try:
                with patience(ep, lambda: silent(t, ep), connect_timeout, Attempt()):
                    t.start_client(timeout=connect_timeout)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                if not t.remote_version:
                    raise no_banner(ep, time.monotonic() - began, connect_timeout) from None
                raise TransportError(f"SSH handshake failed: {exc}", host=spec.name,
                                     stage="handshake") from None
            if not t.remote_version:
                raise no_banner(ep, time.monotonic() - began, connect_timeout)
            key = server_key(t, ep)
        finally:
            t.close()
    finally:
        if jump:
            jump.close()
    return kh.record(spec.name, ep.hostname, ep.port, key, replace=replace)


@dataclass
class HostStatus:
    """One host's row in `gate hosts check`."""

    name: str
    address: str
    reachable: bool = False
    user: str | None = None
    auth: str | None = None
    host_key: str = "not checked"
    sudo: str = "not checked"
    python: str | None = None
    rtt_ms: float | None = None
    hardware: str = "real"  # or "simulated (PROFILE)": tools answer from captures
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ok": self.ok}


def _problem(exc: TransportError) -> str:
    return exc.message + (f" -> {exc.hint}" if exc.hint else "")


def check_one(spec: HostSpec, transport: Transport, *, sudo_password: bool) -> HostStatus:
    """Probe one host through its Transport; every failure becomes a problem line."""
    status = HostStatus(spec.name, spec.address)
    if isinstance(transport, WrappedTransport):  # probe the real connection underneath
        status.hardware = transport.hardware
        transport = transport.inner
    if isinstance(transport, SSHTransport):
        try:
            status.auth = transport.auth_method
            status.host_key = "trusted"
        except (UnknownHostKeyError, ChangedHostKeyError) as exc:
            own = exc.host in (None, spec.name)  # else it is the jump host's key
            status.reachable = own
            if own:
                status.host_key = "unknown" if isinstance(exc, UnknownHostKeyError) else "CHANGED"
            status.problems.append(("" if own else f"jump host {exc.host}: ") + _problem(exc))
            return status
        except AuthError as exc:
            status.reachable, status.host_key, status.auth = True, "trusted", "failed"
            status.problems.append(_problem(exc))
            return status
        except TransportError as exc:
            status.problems.append(_problem(exc))
            return status
    else:
        status.auth, status.host_key = "local", "n/a (local)"
    try:
        _probe(transport, status, sudo_password)
    except TransportError as exc:
        status.problems.append(_problem(exc))
    return status


def _probe(t: Transport, status: HostStatus, sudo_password: bool) -> None:
    who = t.run(["id", "-un"], timeout=20).check("who am i")
    status.reachable = True
    status.user = who.stdout.strip()
    rtts = [t.run(["true"], timeout=20).duration * 1000 for _ in range(3)]
    status.rtt_ms = round(statistics.median(rtts), 2)
    py = t.run(["python3", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
               timeout=20)
    if py.ok:
        status.python = py.stdout.strip()
    else:
        status.problems.append("python3 not found (Ansible and the agent need Python 3) -> "
                               "install python3 or set ansible_python_interpreter")
    if status.user == "root":
        status.sudo = "root (not needed)"
        return
    nopass = t.run(["sudo", "-n", "true"], timeout=20)
    if nopass.ok:
        status.sudo = "ok (no password)"
        return
    if nopass.rc == 127 or "not found" in nopass.stderr:
        status.sudo = "not installed"
        status.problems.append("sudo is not installed -> install sudo, or connect as a user "
                               "that does not need it")
        return
    if not sudo_password:
        status.sudo = "password required"
        status.problems.append(
            f"sudo asks {status.user} for a password -> set GATE_SUDO_PASSWORD (or pass -K), "
            f"or allow NOPASSWD for {status.user} in sudoers")
        return
    try:
        with_pw = t.run(["true"], sudo=True, timeout=20)
    except AuthError:
        status.sudo = "wrong password"
        status.problems.append("sudo refused the password -> check GATE_SUDO_PASSWORD")
        return
    if with_pw.ok:
        status.sudo = "ok (password)"
    else:
        status.sudo = "denied"
        status.problems.append(f"{status.user} may not use sudo here: "
                               f"{with_pw.stderr.strip()[-200:]} -> add the user to sudoers")


def untrusted_hosts(inventory: Inventory, known_hosts: Path, *,
                    ssh_config: Path | None = DEFAULT_SSH_CONFIG,
                    user_known_hosts: Path | None = USER_KNOWN_HOSTS) -> list[str]:
    """The SSH hosts of the inventory (their jump hosts too) with no key on record, by
    name, read from the known_hosts files alone (nothing is connected to).

    Why: every connection to such a host is refused (harness.transport.hostkeys); found
    before a run, it is one line and `gate hosts trust`, not an attempt whose every check
    ends ERROR on the same cause."""
    keys = KnownHosts(site=known_hosts, user=user_known_hosts)
    found: list[str] = []

    def visit(ep: Endpoint) -> None:
        for hop in ep.jumps:
            visit(hop)
        if not keys.lookup(ep.hostname, ep.port)[0] and ep.name not in found:
            found.append(ep.name)

    for name in sorted(inventory.hosts):
        spec = inventory.hosts[name]
        if not spec.is_local:
            visit(resolve(spec, ssh_config=ssh_config, inventory_hosts=inventory.hosts))
    return found


def hosts_check(inventory: Inventory, known_hosts: Path, *, names: Sequence[str] | None = None,
                sudo_password: str | None = None, connect_timeout: float = 10,
                ssh_config: Path | None = DEFAULT_SSH_CONFIG,
                user_known_hosts: Path | None = USER_KNOWN_HOSTS,
                factory: Callable[[HostSpec], Transport] | None = None) -> list[HostStatus]:
    """Check every (or the named) inventory host in parallel; one HostStatus each, in order."""
    chosen = ([inventory.host(n) for n in names] if names
              else [inventory.hosts[n] for n in sorted(inventory.hosts)])

    def make(spec: HostSpec) -> Transport:
        if factory is not None:
            return factory(spec)
        return connect(spec, known_hosts=known_hosts, sudo_password=sudo_password,
                       connect_timeout=connect_timeout, inventory_hosts=inventory.hosts,
                       ssh_config=ssh_config, user_known_hosts=user_known_hosts,
                       inventory_dir=inventory.path.parent)

    def one(spec: HostSpec) -> HostStatus:
        try:
            transport = make(spec)
        except UsageError as exc:
            return HostStatus(spec.name, spec.address, problems=[exc.one_line()])
        try:
            return check_one(spec, transport, sudo_password=sudo_password is not None)
        finally:
            transport.close()

    if not chosen:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(chosen))) as pool:
        return list(pool.map(one, chosen))
