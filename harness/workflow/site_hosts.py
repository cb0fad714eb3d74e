"""`gate config validate --hosts`: on each host, in one command, which of the config's
paths there are missing and which of its engine ports something already listens on.

Why one script per host: a site names dozens of paths over dozens of hosts; one SSH
command each would take minutes. A port in use is said with what answers there: an
engine serving the config's model is "answering" (left running: a run's start will meet
it), anything else is a problem (the engine could not bind it).
"""

from __future__ import annotations

import json
import shlex
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from harness.config.inventory import HostSpec, Inventory
from harness.config.loader import LoadedConfig
from harness.errors import TransportError, UsageError
from harness.transport.pool import connect
from harness.workflow.site_paths import LOCAL, SitePath

MARK = "--- listening ---"  # between the missing paths and `ss`'s lines
NO_SS = "--- no ss ---"


@dataclass(frozen=True)
class EnginePort:
    key: str  # layouts[i].instances[j].port
    host: str
    port: int


@dataclass
class HostFindings:
    problems: list[UsageError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said, not refused


def engine_ports(loaded: LoadedConfig, inventory: Inventory) -> list[EnginePort]:
    """Each layout instance's port on an inventory host, by its key."""
    return [EnginePort(f"layouts[{i}].instances[{j}].port", inst.host, inst.port)
            for i, layout in enumerate(loaded.config.layouts)
            for j, inst in enumerate(layout.instances) if inst.host in inventory.hosts]


def check_hosts(loaded: LoadedConfig, inventory: Inventory, paths: Sequence[SitePath],
                *, sudo_password: str | None = None, timeout: float = 10.0) -> HostFindings:
    """Paths on the hosts that use them (local ones are looked at by site_paths) and the
    engine ports; a host that cannot be reached is one problem (`gate hosts check` says
    more)."""
    ports = engine_ports(loaded, inventory)
    names = sorted({p.host for p in paths if p.host != LOCAL
                    and not inventory.hosts[p.host].is_local} | {p.host for p in ports})
    found = HostFindings()

    def one(name: str) -> HostFindings:
        spec = inventory.host(name)
        return _host(spec, loaded, inventory, [p for p in paths if p.host == name
                                               and not spec.is_local],
                     [p for p in ports if p.host == name], sudo_password, timeout)

    if names:
        with ThreadPoolExecutor(max_workers=min(16, len(names))) as pool:
            for each in pool.map(one, names):
                found.problems += each.problems
                found.notes += each.notes
    return found


def _script(paths: Sequence[str]) -> str:
    quoted = " ".join(shlex.quote(p) for p in paths)
    test = (f'for p in {quoted}; do test -e "$p" || printf \'%s\\n\' "$p"; done; '
            if paths else "")
    return (f"{test}echo {shlex.quote(MARK)}; "
            f"ss -ltnH 2>/dev/null || echo {shlex.quote(NO_SS)}")


def _host(spec: HostSpec, loaded: LoadedConfig, inventory: Inventory,
          paths: list[SitePath], ports: list[EnginePort], sudo_password: str | None,
          timeout: float) -> HostFindings:
    out = HostFindings()
    cfg = str(loaded.path)
    try:
        with connect(spec, known_hosts=loaded.known_hosts_path, sudo_password=sudo_password,
                     connect_timeout=timeout, inventory_hosts=inventory.hosts,
                     inventory_dir=inventory.path.parent) as transport:
            result = transport.run_shell(_script(sorted({p.path for p in paths})),
                                         timeout=60)
    except (TransportError, UsageError) as exc:
        out.problems.append(UsageError(f"not reached: {exc.message}", host=spec.name,
                                       hint="`gate hosts check` says what to do"))
        return out
    missing_text, _, listening = result.stdout.partition(MARK)
    missing = set(missing_text.splitlines())
    out.problems += [UsageError(f"{p.path} does not exist there", file=cfg, key=p.key,
                                host=spec.name, hint="create it, or correct the path")
                     for p in paths if p.path in missing]
    if NO_SS in listening:
        out.notes.append(f"{spec.name}: no `ss` there: its engine ports were not looked at")
        return out
    used = _listening(listening)
    for port in ports:
        if port.port not in used:
            continue
        said = _engine_model(spec.address, port.port)
        if said is not None and loaded.config.model.name in said:
            out.notes.append(f"{spec.name}:{port.port} ({port.key}): answering, an engine "
                             f"serving {loaded.config.model.name} (left running?)")
        else:
            out.problems.append(UsageError(
                f"port {port.port} is in use there by something that is not an engine "
                f"serving {loaded.config.model.name}", file=cfg, key=port.key,
                host=spec.name, hint="stop what listens there, or give the engine "
                                     "another port"))
    return out


def _listening(lines: str) -> set[int]:
    """Ports of `ss -ltnH` lines (`LISTEN 0 4096 0.0.0.0:8000 0.0.0.0:*`)."""
    ports = set()
    for line in lines.splitlines():
        words = line.split()
        if len(words) >= 4:
            port = words[3].rpartition(":")[2]
            if port.isdigit():
                ports.add(int(port))
    return ports


def _engine_model(address: str, port: int) -> list[str] | None:
    """The models an OpenAI-compatible server there lists, or None (not one)."""
    host = f"[{address}]" if ":" in address else address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/v1/models", timeout=3) as resp:
            data = json.loads(resp.read(1 << 20))
        return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
    except (OSError, ValueError, AttributeError):
        return None
