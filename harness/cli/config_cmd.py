"""`gate config show` and `gate config validate`: the effective config, and the whole site
checked as a run would check it, before any host is touched."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import config_option, emit_json, inventory_option, json_option, set_option
from harness.cli.context import open_config
from harness.errors import EXIT_USAGE

if TYPE_CHECKING:
    from harness.config.inventory import Inventory
    from harness.config.loader import LoadedConfig
    from harness.errors import UsageError


@click.group("config")
def config() -> None:
    """Show the effective site config; validate it with the inventory."""


@config.command("show")
@config_option
@set_option
@json_option
def show(config_path: str, overrides: tuple[str, ...], as_json: bool) -> None:
    """The config as gate reads it: every key, defaults filled in, --set applied."""
    import yaml

    loaded = open_config(config_path, overrides)
    data = loaded.config.model_dump(mode="json")
    if as_json:
        emit_json(data)
        return
    click.echo(f"# effective config of {loaded.path}"
               + (f" with --set {', '.join(loaded.overrides)}" if loaded.overrides else ""))
    click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True,
                              default_flow_style=None, width=100), nl=False)


@config.command("validate")
@config_option
@set_option
@inventory_option
@click.option("--hosts", "connect", is_flag=True,
              help="Also connect to every host, as `gate hosts check` (exit 3 when one has "
                   "a problem), and look for the config's paths and engine ports there.")
@click.pass_context
def validate(ctx: click.Context, config_path: str, overrides: tuple[str, ...],
             inventory_path: str | None, connect: bool) -> None:
    """The config, the inventory, every group a gate needs, every host the layouts and
    arms name, every var the arms pass to a shipped playbook, the ports (two engines of a
    layout on one, an engine on sshd's) and the paths the config names (here; with
    --hosts also on the hosts that use them, with the engine ports in use there): exit 0
    when a run would start, else one line per problem naming the key (exit 4). Settings
    weaker than the defaults are listed under their gate: a PASS with them needs a
    reviewer's sign-off."""
    from harness.config.inventory import load_inventory
    from harness.errors import UsageError
    from harness.registry import GATES
    from harness.runner import check_site, suite_hooks

    loaded = open_config(config_path, overrides)
    inventory = load_inventory(Path(inventory_path) if inventory_path
                               else loaded.inventory_path)
    click.echo(f"config {loaded.path}: ok")
    click.echo(f"inventory {inventory.path}: {len(inventory.hosts)} hosts, groups "
               + ", ".join(f"{g} ({len(h)})" for g, h in sorted(inventory.groups.items())))
    cfg = loaded.config
    _refuse(_playbooks(loaded))
    for spec in GATES:
        if not spec.built:
            click.echo(f"{spec.id}: not built in this version")
            continue
        unconfigured = suite_hooks(spec.id).unconfigured
        why = unconfigured(cfg) if unconfigured is not None else None
        if why is not None:
            click.echo(f"{spec.id}: {why}")
            continue
        check_site(spec.id, loaded, Path(inventory_path) if inventory_path else None)
        summary = suite_hooks(spec.id).config_summary
        try:
            said = summary(cfg, inventory) if summary is not None else ""
        except UsageError as exc:
            if exc.file is None:
                exc.file = str(loaded.path)  # what it names is the config's
            raise
        click.echo(f"{spec.id}: ok" + (f" ({said})" if said else ""))
        weakened = suite_hooks(spec.id).weakened
        for line in weakened(cfg) if weakened is not None else []:
            said = line.removesuffix(" (weaker: needs a reviewer's sign-off)")
            click.echo(f"  needs a reviewer's sign-off: {said}")
    problems = _paths_and_ports(loaded, inventory, connect)
    code = 0
    if connect:
        from harness.cli.hosts_cmd import check

        try:
            ctx.invoke(check, config_path=config_path, inventory_path=inventory_path,
                       as_json=False, names=(), ask_sudo_pass=False, timeout=10.0,
                       engines=False, verbose=False)
        except SystemExit as exc:  # a host with a problem: exit 3, after the lines below
            code = int(exc.code or 0)
    _refuse(problems)
    if code:
        sys.exit(code)


def _refuse(problems: list[UsageError]) -> None:
    """Each problem its own line, exit 4 (none: nothing)."""
    for problem in problems:
        click.echo(f"gate: error: {problem.one_line()}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)


def _playbooks(loaded: LoadedConfig) -> list[UsageError]:
    from harness.workflow.site_paths import playbook_problems

    return playbook_problems(loaded)


def _paths_and_ports(loaded: LoadedConfig, inventory: Inventory,
                     connect: bool) -> list[UsageError]:
    """The paths the config names where they are used (here; on the hosts with --hosts)
    and the engine ports (sshd's; with --hosts, what listens there): one line of what
    was looked at, the problems returned."""
    from harness.workflow.site_paths import (
        LOCAL,
        local_problems,
        site_paths,
        ssh_port_clashes,
    )

    paths = site_paths(loaded, inventory)
    problems = local_problems(loaded, inventory, paths) + ssh_port_clashes(loaded, inventory)
    here = [p for p in paths if p.host == LOCAL or inventory.hosts[p.host].is_local]
    said = f"paths: {len(here)} on this machine looked at"
    if connect:
        from harness.workflow.site_hosts import check_hosts

        found = check_hosts(loaded, inventory, paths)
        problems += found.problems
        said += f", {len(paths) - len(here)} on the hosts; engine ports on the hosts"
        for note in found.notes:
            click.echo(f"  {note}")
    else:
        said += f"; {len(paths) - len(here)} on the hosts need --hosts"
    click.echo(said + (f": {len(problems)} problem(s)" if problems else ": ok"))
    return problems
