"""`gate config validate`: the paths and ports the config names, where they will be used.

Why: a fio target that does not exist on one GPU host, a playbook path with a typo or an
engine port that is sshd's ends a gate ERROR hours in; here each is one line naming the
config key (and host), exit 4. Paths on this machine, and on inventory hosts that are this
machine (`ansible_connection=local`), are looked at directly; on the other hosts only with
`--hosts`, one `test -e` script per host (harness.workflow.site_hosts), never one
connection per path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.config.inventory import Inventory
from harness.config.loader import LoadedConfig
from harness.config.models import CommandAction, PlaybookAction, SiteConfig
from harness.errors import UsageError

LOCAL = ""  # SitePath.host of a path on this machine (gate's own)


@dataclass(frozen=True)
class SitePath:
    """A path the config names and the host that uses it (LOCAL: this machine)."""

    key: str
    path: str
    host: str = LOCAL


def site_paths(loaded: LoadedConfig, inventory: Inventory) -> list[SitePath]:
    """Every path the config names that must exist before a run, by key and host."""
    cfg = loaded.config
    out = list(_local(loaded))
    out += _remote(cfg, inventory)
    return out


def _group(inventory: Inventory, group: str) -> list[str]:
    return [h.name for h in inventory.group(group)] if group in inventory.groups else []


def _local(loaded: LoadedConfig) -> Iterator[SitePath]:
    """gate's own files: the load agent's wheels where it is shipped, command actions'
    programs on this machine (a path, not a name on the PATH)."""
    cfg = loaded.config
    if cfg.load.placement == "client" and cfg.load.agent_wheels:
        yield SitePath("load.agent_wheels", str(loaded.resolve(cfg.load.agent_wheels)))
    for key, action in _actions(cfg):
        if isinstance(action, CommandAction) and action.command[0].startswith("/") \
                and "{" not in action.command[0]:
            yield SitePath(f"{key}.command[0]", action.command[0],
                           LOCAL if action.host == "local" else action.host)


def _actions(cfg: SiteConfig) -> Iterator[tuple[str, CommandAction | PlaybookAction]]:
    if cfg.arms is None:
        return
    for arm_name in ("baseline", "accelerated"):
        arm = getattr(cfg.arms, arm_name)
        for which in ("start", "stop", "restart"):
            action = getattr(arm, which)
            if action is not None:
                yield f"arms.{arm_name}.{which}", action


def _remote(cfg: SiteConfig, inventory: Inventory) -> Iterator[SitePath]:
    """Paths on the hosts that use them: G2's fio targets and gdsio directory, G3's KV
    volume, G1's weights directory and interpreters, tools named by path."""
    g2, ev = cfg.gates.g2, cfg.gates.g3.evidence
    for i, target in enumerate(g2.fio):
        for host in _group(inventory, target.group):
            yield SitePath(f"gates.g2.fio[{i}].path", target.path, host)
    gpus = _group(inventory, "gpu")
    if g2.gdsio is not None:
        yield from (SitePath("gates.g2.gdsio.path", g2.gdsio.path, h) for h in gpus)
        if g2.gdsio.gdsio.startswith("/"):
            yield from (SitePath("gates.g2.gdsio.gdsio", g2.gdsio.gdsio, h) for h in gpus)
    if g2.gds and g2.gdscheck.startswith("/"):
        yield from (SitePath("gates.g2.gdscheck", g2.gdscheck, h) for h in gpus)
    layout_hosts = sorted({i.host for la in cfg.layouts for i in la.instances
                           if i.host in inventory.hosts})
    # The diskstats files are not looked for: the kernel's /proc/diskstats at a site, a
    # file the simulated storage writes once it runs in the demo.
    if ev.kv_volume is not None:
        for host in layout_hosts:
            yield SitePath("gates.g3.evidence.kv_volume.path", ev.kv_volume.path, host)
    for group, bom in cfg.gates.g1.bom.items():
        for host in _group(inventory, group):
            if bom.weights is not None:
                yield SitePath(f"gates.g1.bom.{group}.weights.directory",
                               bom.weights.directory, host)
            if bom.software is not None and bom.software.python.startswith("/"):
                yield SitePath(f"gates.g1.bom.{group}.software.python",
                               bom.software.python, host)


def local_problems(loaded: LoadedConfig, inventory: Inventory,
                   paths: list[SitePath]) -> list[UsageError]:
    """The paths on this machine (and on hosts that are it) that do not exist."""
    out: list[UsageError] = []
    for p in paths:
        here = p.host == LOCAL or inventory.hosts[p.host].is_local
        if here and not Path(p.path).expanduser().exists():
            out.append(UsageError(f"{p.path} does not exist" + (f" (on {p.host}, this "
                                  "machine)" if p.host else ""), file=str(loaded.path),
                                  key=p.key, hint="create it, or correct the path"))
    return out


def playbook_problems(loaded: LoadedConfig) -> list[UsageError]:
    """The arms' playbooks gate cannot find, by key (found before the gates' own checks
    of the playbooks' vars, which would name the file and not the key)."""
    from harness.ansible.runner import playbook_path

    out = []
    for key, action in _actions(loaded.config):
        if isinstance(action, PlaybookAction):
            try:
                playbook_path(action.playbook)
            except UsageError as exc:
                out.append(UsageError(exc.message, file=str(loaded.path),
                                      key=f"{key}.playbook",
                                      hint="a file, or one of gate's playbooks (serve.yml)"))
    return out


def ssh_port_clashes(loaded: LoadedConfig, inventory: Inventory) -> list[UsageError]:
    """An engine port that is its host's SSH port: the engine could never bind it."""
    out = []
    for i, layout in enumerate(loaded.config.layouts):
        for j, inst in enumerate(layout.instances):
            spec = inventory.hosts.get(inst.host)
            if spec is not None and not spec.is_local and spec.port == inst.port:
                out.append(UsageError(
                    f"{inst.host}:{inst.port} is the host's SSH port (inventory)",
                    file=str(loaded.path), key=f"layouts[{i}].instances[{j}].port",
                    hint="give the engine another port"))
    return out
