"""`gate config show` and `gate config validate`: the effective config, and the whole site
checked as a run would check it, before any host is touched."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import config_option, emit_json, inventory_option, json_option, set_option
from harness.cli.context import open_config


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
                   "a problem).")
@click.pass_context
def validate(ctx: click.Context, config_path: str, overrides: tuple[str, ...],
             inventory_path: str | None, connect: bool) -> None:
    """The config, the inventory, every group a gate needs, every host the layouts and
    arms name, and every var the arms pass to a shipped playbook: exit 0 when a run would
    start, else one line naming what to fix (exit 4). Settings weaker than the defaults
    are listed under their gate: a PASS with them needs a reviewer's sign-off."""
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
    if connect:
        from harness.cli.hosts_cmd import check

        ctx.invoke(check, config_path=config_path, inventory_path=inventory_path,
                   as_json=False, names=(), ask_sudo_pass=False, timeout=10.0,
                   engines=False, verbose=False)
