"""The files one ansible-runner run needs: an ssh config, unsafe extravars, ansible.cfg.

Why an ssh config of our own: OpenSSH passes `-o` options to the main connection only;
a ProxyJump hop would check ~/.ssh/known_hosts alone and use no key from the inventory.
With `-F` every hop checks the site known_hosts strictly and gets the right key, and the
user's ~/.ssh/config and /etc/ssh/ssh_config are still included underneath.
Why unsafe extravars: Ansible templates `{{ }}` in extra vars; a document title or a path
from the config must reach the host as written, so every string is tagged `!unsafe`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.config.inventory import Inventory
from harness.transport.endpoint import split_hop


def _quoted(path: Path | str) -> str:
    return '"' + str(path).replace('"', "") + '"'


def ssh_config(inventory: Inventory, known_hosts: Path,
               user_known_hosts: Path | None = Path("~/.ssh/known_hosts")) -> str:
    """An ssh_config text: per-jump-hop keys, strict checking against the site file."""
    blocks: dict[str, list[str]] = {}
    for spec in inventory.hosts.values():
        if not spec.jump:
            continue
        for hop in spec.jump.split(","):
            user, host, _port = split_hop(hop)
            known = inventory.hosts.get(host) or next(
                (s for s in inventory.hosts.values() if s.address == host), None)
            key = (known.key_file if known and known.key_file else spec.key_file)
            lines = blocks.setdefault(host, [])
            if known and known.address != host and f"    HostName {known.address}" not in lines:
                lines.append(f"    HostName {known.address}")
            if key and f"    IdentityFile {_quoted(key)}" not in lines:
                lines.append(f"    IdentityFile {_quoted(key)}")
            hop_user = user or (known.user if known else None)
            if hop_user and not any(ln.startswith("    User ") for ln in lines):
                lines.append(f"    User {hop_user}")
    files = [str(user_known_hosts)] if user_known_hosts else []
    files.append(str(known_hosts.expanduser().resolve()))
    out = ["# Written by gate for one ansible-runner run. Host keys come only from the",
           "# files below; an unknown or changed key fails the run (`gate hosts trust`).", ""]
    for host, lines in blocks.items():
        out += [f"Host {host}", *lines, ""]
    out += ["Host *",
            "    UserKnownHostsFile " + " ".join(_quoted(f) for f in files),
            "    StrictHostKeyChecking yes",
            "    UpdateHostKeys no",
            "    BatchMode yes",
            "    ServerAliveInterval 15",
            "    ServerAliveCountMax 3",
            "    Include ~/.ssh/config",
            "    Include /etc/ssh/ssh_config",
            ""]
    return "\n".join(out)


_TEMPLATE_MARKERS = ("{{", "{%", "{#")


def unsafe_yaml(value: Any) -> str:
    """YAML flow text for value in which no string is ever templated.

    A string that holds a template marker is tagged !unsafe. Every other string is a
    plain double-quoted scalar: ansible-core 2.19 resolves an !unsafe scalar's type from
    its text, so `!unsafe "off"` arrived as the boolean false (and "yes", "1", "null"
    likewise), while a quoted scalar without the tag always stays a string.
    """
    if isinstance(value, str):
        if any(m in value for m in _TEMPLATE_MARKERS):
            return "!unsafe " + json.dumps(value)
        return json.dumps(value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, Mapping):
        items = ", ".join(f"{json.dumps(str(k))}: {unsafe_yaml(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(unsafe_yaml(v) for v in value) + "]"
    if isinstance(value, Path):
        return unsafe_yaml(str(value))
    raise TypeError(f"extra var of type {type(value).__name__} cannot be passed to Ansible")


def ansible_cfg() -> str:
    """A fixed ansible.cfg, so an ansible.cfg in the user's cwd cannot change a gate."""
    return "\n".join([
        "[defaults]",
        "host_key_checking = True",
        "retry_files_enabled = False",
        "nocolor = True",
        "interpreter_python = auto_silent",
        "deprecation_warnings = False",
        "",
        "[ssh_connection]",
        "pipelining = True",
        "",
    ])
