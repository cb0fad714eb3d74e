"""The pre-flight: before a gate's run row exists, what its planned checks need of the site
is looked at once, and a missing piece is refused (exit 4, one line per cause naming the
host or key) instead of recorded as an attempt whose checks all end ERROR on it.

What it looks at: every host the gate touches is reached as `gate hosts check` reaches it
(auth, host key; sudo where a check uses it: harness.transport.trust.check_one), then per
host one shell command finds the programs the checks run (`command -v`, sudo's PATH for
those run with sudo), the load agent's wheels fit the client host's Python (what its
install would refuse: harness.remote.ship.choose), and services the gate reads but never
starts answer. What the checks need is the suite's word (SuiteHooks.needs); a need whose
checks are all optional (`gates.<key>.optional`, G1's unverifiable items) is not one.

A simulated host answers its hardware tools from captures and refuses a shell script that
names one; there each such program is asked with the very command its check sends, so the
demo's pre-flight finds what the gate will find, no more and no less.

Not run for `gate resume` (the run was allowed when it started; its hosts are checked by
the resume's own host-key check), for a custom suite (no plan, no needs) or a run that
selects checks with pytest arguments (which checks run is known only to pytest).
"""

from __future__ import annotations

import shlex
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.config.inventory import HostSpec, Inventory
from harness.config.loader import LoadedConfig
from harness.errors import PreflightError, TransportError, UsageError
from harness.registry import gate_spec
from harness.suite_hooks import Needs, SuiteHooks, ToolNeed, UrlNeed
from harness.transport.base import Transport
from harness.transport.pool import connect
from harness.transport.trust import HostStatus, check_one

SUDO_OK = ("ok (no password)", "root (not needed)", "ok (password)")
CLIENT_GROUP = "client"  # load.placement: client runs the agent on its first host
URL_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Site:
    """What the pre-flight reaches: the config, its inventory and the sudo password."""

    loaded: LoadedConfig
    inventory: Inventory
    sudo_password: str | None = None
    connect_timeout: float = 10.0


def preflight(gate: str, hooks: SuiteHooks, site: Site) -> None:
    """Raise PreflightError naming every cause found; return when the gate can start."""
    needs = required(gate, hooks, site)
    hosts = _hosts(gate, site.inventory, needs)
    causes: list[UsageError] = []
    wheels: Path | None = None
    if needs.load_agent:
        try:
            wheels = _agent_root(site.loaded)
        except UsageError as exc:
            exc.file = exc.file or str(site.loaded.path)
            causes.append(exc)
    client = _client(site.inventory) if needs.load_agent else None

    def one(spec: HostSpec) -> list[UsageError]:
        return _host(spec, site, needs, wheels if spec.name == client else None,
                     f"gates.{gate_spec(gate).config_key}.optional")

    if hosts:
        with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
            for found in pool.map(one, hosts):
                causes += found
    causes += [c for url in needs.urls if (c := _url(url, site.loaded)) is not None]
    if causes:
        raise PreflightError(gate, causes)


def required(gate: str, hooks: SuiteHooks, site: Site) -> Needs:
    """The suite's needs, less those whose every check the site made optional."""
    if hooks.needs is None:
        return Needs()
    cfg = site.loaded.config
    entries = list(getattr(cfg.gates, gate_spec(gate).config_key).optional)
    if hooks.optional_checks is not None:
        entries += hooks.optional_checks(cfg, site.inventory)
    needs = hooks.needs(cfg, site.inventory)

    def needed(checks: Sequence[str]) -> bool:
        return not checks or not all(_optional(c, entries) for c in checks)

    agent = tuple(c for c in needs.load_agent if not _optional(c, entries))
    return Needs(tools=tuple(t for t in needs.tools if needed(t.checks)),
                 urls=tuple(u for u in needs.urls if needed(u.checks)),
                 sudo_hosts=needs.sudo_hosts, load_agent=agent)


def _optional(check: str, entries: Sequence[str]) -> bool:
    """As `gates.<key>.optional` reads: the whole id, or its function (every parameter)."""
    return check in entries or check.split("[", 1)[0] in entries


def _hosts(gate: str, inventory: Inventory, needs: Needs) -> list[HostSpec]:
    """The gate's groups' hosts and every host a need names, by name."""
    names = {h.name for group in gate_spec(gate).groups if group in inventory.groups
             for h in inventory.group(group)}
    names |= {t.host for t in needs.tools} | set(needs.sudo_hosts)
    if needs.load_agent and _client(inventory) is not None:
        names.add(str(_client(inventory)))
    return [inventory.host(n) for n in sorted(names)]


def _client(inventory: Inventory) -> str | None:
    members = inventory.group(CLIENT_GROUP) if CLIENT_GROUP in inventory.groups else []
    return members[0].name if members else None


def _host(spec: HostSpec, site: Site, needs: Needs, wheels: Path | None,
          optional: str) -> list[UsageError]:
    """Reach one host, then look for its programs and, on the client, the agent's Python."""
    tools = [t for t in needs.tools if t.host == spec.name]
    sudo = spec.name in needs.sudo_hosts or any(t.sudo for t in tools)
    try:
        transport = connect(spec, known_hosts=site.loaded.known_hosts_path,
                            sudo_password=site.sudo_password,
                            connect_timeout=site.connect_timeout,
                            inventory_hosts=site.inventory.hosts,
                            inventory_dir=site.inventory.path.parent)
    except UsageError as exc:
        exc.host = exc.host or spec.name
        return [exc]
    try:
        reach = _reach(spec, transport, sudo, site.sudo_password is not None)
        found = [_cause(spec.name, p) for p in reach.problems]
        if not reach.reached:
            return found
        usable = [t for t in tools if not t.sudo or reach.sudo_ok]
        found += [_missing_cause(t, spec.name, optional) for t in _absent(transport, usable)]
        if wheels is not None:
            found += _agent(transport, wheels, spec.name)
        return found
    except TransportError as exc:
        return [UsageError(exc.message, host=spec.name,
                           hint=exc.hint or "`gate hosts check` shows what works there")]
    finally:
        transport.close()


@dataclass(frozen=True)
class _Reach:
    reached: bool
    problems: list[str]  # `gate hosts check`'s lines: "what -> what to do"
    sudo_ok: bool = False


def _reach(spec: HostSpec, transport: Transport, sudo: bool, password: bool) -> _Reach:
    """A host whose checks use sudo gets `gate hosts check`'s whole probe; any other one
    command, which reaches it (auth, host key) as a check would (a TransportError)."""
    if not sudo:
        transport.run(["true"], timeout=20).check("reach the host")
        return _Reach(True, [])
    status = check_one(spec, transport, sudo_password=password)
    if not status.reachable or status.user is None:
        return _Reach(False, list(status.problems))
    return _Reach(True, _problems(status, sudo), status.sudo in SUDO_OK)


def _cause(host: str, problem: str) -> UsageError:
    """A `gate hosts check` problem line ("what -> what to do") as a cause."""
    what, _, todo = problem.partition(" -> ")
    return UsageError(what, host=host, hint=todo or None)


def _problems(status: HostStatus, sudo: bool) -> list[str]:
    """`gate hosts check`'s problems of a reached host that stop this gate: sudo's where a
    check uses sudo (python3's is the agent's, which says it itself, and Ansible's, whose
    playbooks say it)."""
    return [p for p in status.problems if not p.startswith("python3 not found")
            and (sudo or "sudo" not in p)]


def _absent(transport: Transport, tools: list[ToolNeed]) -> list[ToolNeed]:
    """The needs whose program is not on the PATH the check will use: one command per
    host and sudo mode, unless a simulated host refuses it (then one per program)."""
    missing: list[ToolNeed] = []
    for sudo in (False, True):
        group = [t for t in tools if t.sudo is sudo]
        names = sorted({t.argv[0] for t in group})
        if not names:
            continue
        found = transport.run_shell(_script(names), sudo=sudo, timeout=60)
        if found.simulated:
            gone = {n for n in names if _absent_one(transport, n, group, sudo)}
        elif found.rc != 0:
            raise TransportError(f"looking for {', '.join(names)} failed (exit {found.rc}): "
                                 f"{found.stderr.strip()[-200:]}", host=transport.host,
                                 stage="preflight")
        else:
            gone = set(found.stdout.splitlines())
        missing += [t for t in group if t.argv[0] in gone]
    return missing


def _script(names: Sequence[str]) -> str:
    quoted = " ".join(shlex.quote(n) for n in names)
    return (f'for t in {quoted}; do command -v "$t" >/dev/null 2>&1 || '
            "printf '%s\\n' \"$t\"; done")


def _absent_one(transport: Transport, name: str, group: list[ToolNeed], sudo: bool) -> bool:
    """One program on a simulated host: a real one as on any host, a simulated one by the
    command its check sends (answered from a capture, or 127 where there is none)."""
    found = transport.run_shell(_script([name]), sudo=sudo, timeout=60)
    if not found.simulated:
        return name in found.stdout.splitlines()
    argv = next(t.argv for t in group if t.argv[0] == name)
    return transport.run(list(argv), sudo=sudo, timeout=120).rc == 127


def _missing_cause(need: ToolNeed, host: str, optional: str) -> UsageError:
    checks = ", ".join(need.checks[:3]) + (f" and {len(need.checks) - 3} more"
                                           if len(need.checks) > 3 else "")
    where = "sudo's PATH" if need.sudo else "the PATH"
    return UsageError(f"{need.argv[0]} is not on {where} there (needed by {checks})",
                      host=host, hint=f"install it there or name its full path in gate.yaml, "
                                      f"or declare {need.instead or optional} to run "
                                      "without it")


def _agent_root(loaded: LoadedConfig) -> Path:
    from harness.remote.placement import agent_root

    wheels = loaded.config.load.agent_wheels
    return agent_root(loaded.resolve(wheels) if wheels else None)


def _agent(transport: Transport, wheels: Path, host: str) -> list[UsageError]:
    """What installing the agent would refuse first: no Python 3.9+ on the client host, or
    no wheels in the bundle for the one it has (harness.remote.ship)."""
    from harness.remote.ship import PROBE, choose, parse_probe

    found = transport.run_shell(PROBE, timeout=60)
    try:
        choose(parse_probe(found.stdout), wheels, host)
    except UsageError as exc:
        exc.host = exc.host or host
        exc.message = f"load agent (load.placement: client): {exc.message}"
        return [exc]
    return []


def _url(need: UrlNeed, loaded: LoadedConfig) -> UsageError | None:
    """Any HTTP answer will do (the gate reads it later); no answer is a cause."""
    try:
        with urllib.request.urlopen(need.url, timeout=URL_TIMEOUT_S):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", exc)
        return UsageError(f"{need.url} does not answer ({why})", file=str(loaded.path),
                          key=need.key, hint="start it first: the gate reads it, it never "
                                             "starts it")
