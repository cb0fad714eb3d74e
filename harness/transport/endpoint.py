"""Where and as whom to connect: a HostSpec from the inventory, completed by ~/.ssh/config.

Why: the inventory is the one source of address, port, user, key and jump host; what it
leaves open is filled in the way OpenSSH would (HostName, Port, User, IdentityFile,
ProxyJump, ProxyCommand from ~/.ssh/config), so paramiko and Ansible reach the same host.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import paramiko

from harness.config.inventory import HostSpec
from harness.errors import InventoryError

DEFAULT_SSH_CONFIG = Path("~/.ssh/config")


@dataclass(frozen=True)
class Endpoint:
    """One SSH hop: the name shown in messages, where to connect, who to log in as."""

    name: str
    hostname: str
    port: int
    user: str
    key_files: tuple[str, ...] = ()
    jumps: tuple[Endpoint, ...] = ()  # outermost hop first
    proxy_command: str | None = None

    def label(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


def load_ssh_config(path: Path | None) -> paramiko.SSHConfig:
    if path is None:
        return paramiko.SSHConfig()
    p = path.expanduser()
    return paramiko.SSHConfig.from_path(str(p)) if p.is_file() else paramiko.SSHConfig()


def split_hop(hop: str) -> tuple[str | None, str, int | None]:
    """`[ssh://][user@]host[:port]` -> (user, host, port)."""
    text = hop.strip().removeprefix("ssh://")
    user = None
    if "@" in text:
        user, text = text.rsplit("@", 1)
    port: int | None = None
    if text.startswith("["):  # [v6addr]:port
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
    elif text.count(":") == 1:
        host, _, p = text.partition(":")
        if not p.isdigit():
            raise InventoryError(f"bad ProxyJump hop {hop!r}: port is not a number")
        port = int(p)
    else:
        host = text
    if not host:
        raise InventoryError(f"bad ProxyJump hop {hop!r}")
    return user, host, port


def _find_spec(specs: Mapping[str, HostSpec], host: str) -> HostSpec | None:
    if host in specs:
        return specs[host]
    return next((s for s in specs.values() if s.address == host), None)


def resolve(spec: HostSpec, *, ssh_config: Path | None = DEFAULT_SSH_CONFIG,
            inventory_hosts: Mapping[str, HostSpec] | None = None) -> Endpoint:
    """The Endpoint for an inventory host, with its jump chain resolved the same way."""
    config = load_ssh_config(ssh_config)
    return _resolve(spec, config, dict(inventory_hosts or {}), spec.key_file, depth=0)


def _resolve(spec: HostSpec, config: paramiko.SSHConfig, specs: dict[str, HostSpec],
             fallback_key: str | None, depth: int) -> Endpoint:
    if depth > 5:
        raise InventoryError(f"host {spec.name}: ProxyJump chain is longer than 5 hops "
                             "(a loop?)")
    found = config.lookup(spec.address)
    hostname = str(found.get("hostname", spec.address))
    port = spec.port
    if port == 22 and "port" in found:  # the inventory did not say (22 is its default)
        port = int(found["port"])
    user = spec.user or str(found.get("user") or getpass.getuser())
    keys: list[str] = []
    if spec.key_file:
        keys.append(str(Path(spec.key_file).expanduser()))
    keys += [str(Path(k).expanduser()) for k in found.get("identityfile", []) if k]
    if not keys and fallback_key:
        keys.append(str(Path(fallback_key).expanduser()))
    jump_text = spec.jump or found.get("proxyjump")
    jumps: list[Endpoint] = []
    if jump_text and str(jump_text).lower() != "none":
        for hop in str(jump_text).split(","):
            h_user, h_host, h_port = split_hop(hop)
            known = _find_spec(specs, h_host)
            hop_spec = HostSpec(
                name=known.name if known else h_host,
                address=known.address if known else h_host,
                port=h_port or (known.port if known else 22),
                user=h_user or (known.user if known else None),
                key_file=known.key_file if known else None,
            )
            jumps.append(_resolve(hop_spec, config, specs, spec.key_file or fallback_key,
                                  depth + 1))
    proxy = found.get("proxycommand")
    return Endpoint(
        name=spec.name, hostname=hostname, port=port, user=user, key_files=tuple(keys),
        jumps=tuple(jumps),
        proxy_command=str(proxy) if proxy and str(proxy).lower() != "none" and not jumps
        else None,
    )
