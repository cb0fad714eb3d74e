"""connect() for one inventory host, and a pool that keeps one Transport per host.

Why a pool: a gate touches the same hosts over and over (probes, counters at every G4
pull); one reused connection per host is what makes 100 short commands take seconds, and
`run_all` fans one command out to many hosts in parallel threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from harness.config.inventory import HostSpec, Inventory
from harness.errors import TransportError
from harness.transport.backends import (
    BackendHost,
    BackendResolver,
    registered_backend,
    with_backends,
)
from harness.transport.base import Transport
from harness.transport.connection import ConnectOptions
from harness.transport.endpoint import DEFAULT_SSH_CONFIG, resolve
from harness.transport.hostkeys import KnownHosts
from harness.transport.local import LocalTransport
from harness.transport.result import CommandResult
from harness.transport.ssh import SSHTransport

USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


def connect(spec: HostSpec, *, known_hosts: Path, sudo_password: str | None = None,
            connect_timeout: float = 10, inventory_hosts: Mapping[str, HostSpec] | None = None,
            ssh_config: Path | None = DEFAULT_SSH_CONFIG,
            user_known_hosts: Path | None = USER_KNOWN_HOSTS,
            keepalive: int = 15, inventory_dir: Path | None = None,
            on_simulated: Callable[[], None] | None = None,
            backends: BackendResolver = registered_backend) -> Transport:
    """A Transport for the host: local for `ansible_connection=local`, else SSH.

    The SSH connection opens lazily on the first command. known_hosts is the site file;
    ~/.ssh/known_hosts is consulted first. inventory_hosts lets a ProxyJump hop that is
    itself an inventory host use that host's user and key. A host variable that names a
    registered backend (e.g. `gate_sim_hardware`: hardware tools answer from captures)
    wraps the connection in it (harness.transport.backends).
    """
    transport: Transport
    if spec.is_local:
        transport = LocalTransport(spec.name, sudo_password=sudo_password)
    else:
        endpoint = resolve(spec, ssh_config=ssh_config, inventory_hosts=inventory_hosts)
        options = ConnectOptions(
            known_hosts=KnownHosts(site=known_hosts, user=user_known_hosts),
            connect_timeout=connect_timeout, keepalive=keepalive)
        transport = SSHTransport(endpoint, options, sudo_password=sudo_password)
    host = BackendHost(spec.name, spec.vars, inventory_dir, on_simulated)
    return with_backends(host, transport, backends)


class TransportPool:
    """One Transport per inventory host, created on first use and reused until close().

    on_simulated is called each time a host with simulated hardware answers from a capture;
    backends finds the wrapper a host variable asks for (default: the registered ones).
    """

    def __init__(self, inventory: Inventory, *, known_hosts: Path,
                 sudo_password: str | None = None, connect_timeout: float = 10,
                 factory: Callable[[HostSpec], Transport] | None = None,
                 max_workers: int = 32,
                 on_simulated: Callable[[], None] | None = None,
                 backends: BackendResolver = registered_backend) -> None:
        self.inventory = inventory
        self._factory = factory or (lambda spec: connect(
            spec, known_hosts=known_hosts, sudo_password=sudo_password,
            connect_timeout=connect_timeout, inventory_hosts=inventory.hosts,
            inventory_dir=inventory.path.parent, on_simulated=on_simulated,
            backends=backends))
        self._transports: dict[str, Transport] = {}
        self._lock = threading.Lock()
        self.max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None  # kept: threads are reused

    def get(self, name: str) -> Transport:
        with self._lock:
            if name not in self._transports:
                self._transports[name] = self._factory(self.inventory.host(name))
            return self._transports[name]

    def run_all(self, names: Iterable[str], argv: Sequence[str], *, timeout: float = 60,
                sudo: bool = False, env: Mapping[str, str] | None = None
                ) -> dict[str, CommandResult | TransportError]:
        """The same argv on every host at once; a host's failure is its entry, not a raise."""
        chosen = list(dict.fromkeys(names))
        transports = {n: self.get(n) for n in chosen}

        def one(name: str) -> CommandResult | TransportError:
            try:
                return transports[name].run(argv, timeout=timeout, sudo=sudo, env=env)
            except TransportError as exc:
                return exc

        if not chosen:
            return {}
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.max_workers,
                                                    thread_name_prefix="gate-ssh")
            executor = self._executor
        return dict(zip(chosen, executor.map(one, chosen), strict=True))

    def close(self) -> None:
        with self._lock:
            transports, self._transports = list(self._transports.values()), {}
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        for t in transports:
            t.close()

    def __enter__(self) -> TransportPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
