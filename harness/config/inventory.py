"""The Ansible inventory, read with Ansible's own loader (never a hand-written INI parser).

It is the one source of each host's address, port, user, key and jump host; the SSH
transport and ansible-runner both start from the HostSpec built here.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InventoryError

GROUPS = ("gpu", "storage", "client")
_MAGIC = ("ansible_", "inventory_", "group_names", "groups", "omit", "playbook_dir")


@dataclass(frozen=True)
class HostSpec:
    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    jump: str | None = None
    ssh_args: str = ""
    connection: str = "ssh"
    groups: tuple[str, ...] = ()
    vars: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_local(self) -> bool:
        return self.connection == "local"


def _jump_from_args(args: str) -> str | None:
    """Pull ProxyJump out of ansible_ssh_common_args (`-o ProxyJump=user@host:port`)."""
    words = shlex.split(args)
    for i, word in enumerate(words):
        opt = None
        if word == "-o" and i + 1 < len(words):
            opt = words[i + 1]
        elif word.startswith("-o"):
            opt = word[2:]
        elif word == "-J" and i + 1 < len(words):
            return words[i + 1]
        if opt and opt.lower().startswith("proxyjump="):
            return opt.split("=", 1)[1]
    return None


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: dict[str, HostSpec]
    groups: dict[str, tuple[str, ...]]

    def group(self, name: str) -> list[HostSpec]:
        """The group's hosts; a group that is missing or empty is a usage error (a gate
        needing [gpu] must not run over no GPU host, nor check an empty table)."""
        if name not in self.groups:
            raise InventoryError(
                f"group [{name}] is not in the inventory",
                file=str(self.path),
                hint=f"groups present: {', '.join(sorted(self.groups)) or 'none'}",
            )
        if not self.groups[name]:
            raise InventoryError(
                f"group [{name}] has no hosts", file=str(self.path),
                key=_line_key(self.path, f"[{name}]"),
                hint=f"add a host line under [{name}], or delete the section",
            )
        return [self.hosts[h] for h in self.groups[name]]

    def host(self, name: str) -> HostSpec:
        try:
            return self.hosts[name]
        except KeyError:
            raise InventoryError(
                f"host {name!r} is not in the inventory", file=str(self.path)
            ) from None

    def require_groups(self, names: Iterable[str]) -> None:
        for name in names:
            self.group(name)


def _root_cause(text: str) -> str:
    """Ansible nests causes; the last 'Failed to parse ...' line is the one that helps."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if "Failed to parse" in line or "line" in line.lower()]
    return (causes[-1] if causes else (lines[0] if lines else "unparseable"))[:200]


def _line_key(path: Path, *words: str) -> str | None:
    """`line N` of the first line of `path` holding every word (comments skipped), so an
    error names the line to edit; None when no line does (the value came from elsewhere)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0].split(";", 1)[0] if not line.lstrip().startswith(
            ("#", ";")) else ""
        if body and all(w in body for w in words):
            return f"line {number}"
    return None


def _ini_problem(path: Path) -> tuple[int, str, str] | None:
    """(line number, line, what is wrong) of the first line Ansible's INI parser rejects.

    Ansible 2.19 reports only "Completely failed to parse inventory source" and drops the
    line it stopped at; its INI plugin, run again here, still knows it while it raises."""
    from ansible.errors import AnsibleError
    from ansible.inventory.data import InventoryData
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.inventory.ini import InventoryModule

    seen: dict[str, int] = {}

    class Located(InventoryModule):  # type: ignore[misc]
        def _parse(self, lines: list[str]) -> None:
            try:
                super()._parse(lines)
            finally:
                origin = getattr(self, "_origin", None)
                seen["line"] = int(getattr(origin, "line_num", 0) or 0)

    module = Located()
    try:
        module.parse(InventoryData(), DataLoader(), str(path.resolve()), cache=False)
    except Exception as exc:
        cause = exc.__cause__ or exc
        what = (str(getattr(cause, "message", "")) or str(cause)) \
            if isinstance(cause, AnsibleError) else \
            "neither a [section] header, a host line nor key=value"
        number = seen.get("line", 0)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return number, text, " ".join(what.split())[:160]
    return None


def _port(path: Path, host: str, value: object) -> int:
    """ansible_port as a number; a word there names its line, not a ValueError."""
    try:
        return int(str(value)) if value not in (None, "") else 22
    except ValueError:
        key = _line_key(path, "ansible_port", str(value))
        raise InventoryError(
            f"ansible_port={value!r} of host {host} is not a port number", file=str(path),
            key=f"{key}: ansible_port" if key else "ansible_port", host=host,
            hint="write a number such as ansible_port=22",
        ) from None


def load_inventory(path: str | Path) -> Inventory:
    """Parse an INI (or YAML) inventory through ansible-core's InventoryManager."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InventoryError("inventory file not found", file=str(p))
    # Imported here: ansible costs ~0.5 s to import and `gate --help` must stay fast.
    from ansible import constants as C
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    # An inventory that fails to parse must be an error, not an empty host list.
    C.INVENTORY_UNPARSED_IS_FAILED = True
    C.INVENTORY_ANY_UNPARSED_IS_FAILED = True
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stderr(chatter), contextlib.redirect_stdout(chatter):
            manager = InventoryManager(loader=DataLoader(), sources=[str(p)])
    except AnsibleError as exc:
        problem = _ini_problem(p) if p.suffix not in (".yml", ".yaml", ".json") else None
        if problem is not None and problem[0]:
            number, line, what = problem
            raise InventoryError(f"cannot parse inventory: {line!r}: {what}", file=str(p),
                                 key=f"line {number}") from None
        reason = _root_cause(str(exc))
        raise InventoryError(f"cannot parse inventory: {reason}", file=str(p)) from None
    hosts: dict[str, HostSpec] = {}
    from ansible.inventory.helpers import get_group_vars
    from ansible.utils.vars import combine_vars

    for h in manager.get_hosts():
        # Group vars ([gpu:vars], [all:vars]) under host vars, as Ansible itself layers them.
        v: dict[str, Any] = dict(combine_vars(get_group_vars(h.get_groups()), h.get_vars()))
        args = str(v.get("ansible_ssh_common_args", "") or "")
        hosts[h.name] = HostSpec(
            name=h.name,
            address=str(v.get("ansible_host", h.name)),
            port=_port(p, h.name, v.get("ansible_port")),
            user=v.get("ansible_user"),
            key_file=v.get("ansible_ssh_private_key_file"),
            jump=_jump_from_args(args),
            ssh_args=args,
            connection=str(v.get("ansible_connection", "ssh")),
            groups=tuple(sorted(g.name for g in h.get_groups() if g.name not in ("all",))),
            vars={k: val for k, val in v.items() if not k.startswith(_MAGIC)},
        )
    groups = {
        name: tuple(h.name for h in group.get_hosts())
        for name, group in manager.groups.items()
        if name not in ("all", "ungrouped")
    }
    inventory = Inventory(path=p.resolve(), hosts=hosts, groups=groups)
    for name in GROUPS:  # a gate's group declared without hosts is a slip, never intended
        if name in groups:
            inventory.group(name)
    return inventory
