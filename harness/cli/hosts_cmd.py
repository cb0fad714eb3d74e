"""`gate hosts check` and `gate hosts trust`: the SSH side of a site, before any gate runs.

Why: a gate that fails halfway on a host key or a sudo prompt wastes a night; `check`
shows per host what works and what to do next (exit 0 all fine, 3 otherwise), `trust`
records a host key on purpose, printing its fingerprint to compare out of band.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from harness.cli.common import (
    config_option,
    emit_json,
    inventory_option,
    json_option,
    stderr_console,
    stdout_console,
)
from harness.cli.verbose import transport_lines, verbose_option
from harness.errors import EXIT_ERROR

if TYPE_CHECKING:
    from harness.config.inventory import Inventory
    from harness.config.models import SiteConfig

from harness.secrets import SUDO_ENV


def _site(config_path: str, inventory_path: str | None) -> tuple[Inventory, Path]:
    inventory, known_hosts, _ = _site_config(config_path, inventory_path)
    return inventory, known_hosts


def _site_config(config_path: str, inventory_path: str | None
                 ) -> tuple[Inventory, Path, SiteConfig]:
    from harness.cli.context import open_config
    from harness.config.inventory import load_inventory

    loaded = open_config(config_path)
    inventory = load_inventory(inventory_path or loaded.inventory_path)
    return inventory, loaded.known_hosts_path, loaded.config


@click.group("hosts")
def hosts() -> None:
    """Check the inventory's hosts; record host keys."""


@hosts.command("check")
@config_option
@inventory_option
@json_option
@click.option("-l", "--limit", "names", multiple=True, metavar="HOST",
              help="Check only these hosts (repeatable).")
@click.option("-K", "--ask-sudo-pass", is_flag=True,
              help=f"Prompt for the sudo password (else ${SUDO_ENV}, if set).")
@click.option("--timeout", default=10.0, show_default=True, help="Connect timeout, seconds.")
@click.option("--engines", is_flag=True,
              help="Also probe the arms' endpoints whose engines are up, as `gate probe` "
                   "does: which engine, and what G3 could prove there (informational: "
                   "G3 starts the engines itself).")
@verbose_option
@click.pass_obj
def check(obj: dict[str, object] | None, config_path: str, inventory_path: str | None,
          as_json: bool, names: tuple[str, ...], ask_sudo_pass: bool, timeout: float,
          engines: bool, verbose: bool) -> None:
    """Per host: reachable, user, auth method, host key, sudo, python, round-trip time.

    Exit 0 when every host is fine, 3 otherwise; each problem says what to do next.
    A host that does not answer is waited for up to --timeout per attempt (3 attempts);
    -v shows each connect, retry and command on stderr.
    """
    from harness.transport import hosts_check

    inventory, known_hosts, cfg = _site_config(config_path, inventory_path)
    for name in names:
        inventory.host(name)  # an unknown name is a usage error, before connecting
    given = (obj or {}).get("sudo_password")
    password = (getpass.getpass("sudo password: ") if ask_sudo_pass
                else given if isinstance(given, str) else None)
    err = stderr_console()
    with transport_lines(lambda line: err.print(line, highlight=False, soft_wrap=True),
                         verbose):
        statuses = hosts_check(inventory, known_hosts, names=list(names) or None,
                               sudo_password=password, connect_timeout=timeout)
    all_ok = all(s.ok for s in statuses)
    probed = []
    if engines:
        from harness.cli.hosts_engines import check_engines

        click.echo("gate: probing the arms' endpoints", err=True)
        probed = check_engines(cfg, inventory, timeout)
    if as_json:
        emit_json({"ok": all_ok, "known_hosts": str(known_hosts), "inventory":
                   str(inventory.path), "hosts": [s.to_dict() for s in statuses],
                   **({"engines": [e.to_dict() for e in probed]} if engines else {})})
    else:
        _table(statuses, known_hosts)
        if engines:
            click.echo("engines (the arms' endpoints):")
            click.echo("\n".join(f"  {e.line()}" for e in probed) or "  no arms configured")
    if not all_ok:
        sys.exit(EXIT_ERROR)  # SystemExit: `python -m harness` drops a return value


def _table(statuses: list[Any], known_hosts: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"hosts (host keys: {known_hosts})", title_justify="left")
    # The hardware column appears only when some host's hardware is simulated.
    show_hw = any(s.hardware != "real" for s in statuses)
    for col in ("host", "address", "reachable", "user", "auth", "host key", "sudo", "python",
                "rtt ms", *(("hardware",) if show_hw else ()), "ok"):
        table.add_column(col, no_wrap=col in ("host", "address"))
    for s in statuses:
        hardware = (f"[yellow]{escape(s.hardware)}[/]" if s.hardware != "real" else "real",)
        table.add_row(
            escape(s.name), escape(s.address), "yes" if s.reachable else "[red]no[/]",
            escape(s.user or "-"), escape(_short_auth(s.auth)),
            escape(s.host_key) if s.host_key == "trusted" else f"[red]{escape(s.host_key)}[/]",
            escape(s.sudo), escape(s.python or "-"),
            f"{s.rtt_ms:.1f}" if s.rtt_ms is not None else "-",
            *(hardware if show_hw else ()),
            "[green]ok[/]" if s.ok else "[red]PROBLEM[/]")
    from rich.console import Console

    # Piped into a file or a ticket, keep whole cells rather than 80-column ellipses.
    out = stdout_console() if sys.stdout.isatty() else Console(width=200)
    out.print(table)
    for s in statuses:
        for problem in s.problems:
            out.print(f"[red]{escape(s.name)}[/]: {escape(problem)}", highlight=False)


def _short_auth(auth: str | None) -> str:
    """`publickey (/very/long/path/id_ed25519)` -> `key id_ed25519` (JSON has it whole)."""
    if not auth:
        return "-"
    if auth.startswith("publickey (") and auth.endswith(")"):
        inner = auth[len("publickey ("):-1]
        return "agent" if inner == "agent" else "key " + Path(inner).name
    return auth


@hosts.command("trust")
@config_option
@inventory_option
@click.option("--replace", is_flag=True,
              help="Replace a different key on record in the site file (after verifying it).")
@click.option("--timeout", default=10.0, show_default=True, help="Connect timeout, seconds.")
@click.argument("names", nargs=-1, required=True, metavar="HOST...")
def trust(config_path: str, inventory_path: str | None, replace: bool, timeout: float,
          names: tuple[str, ...]) -> None:
    """Record HOST's current key in the site known_hosts (trust on first use).

    Compare the printed fingerprint with the host's own (`ssh-keygen -lf
    /etc/ssh/ssh_host_ed25519_key.pub` on its console) before relying on it.
    """
    from rich.markup import escape

    from harness.errors import TransportError
    from harness.transport import trust_host

    inventory, known_hosts = _site(config_path, inventory_path)
    specs = [inventory.host(n) for n in names]
    err = stderr_console()
    failed = False
    for spec in specs:
        try:
            fp = trust_host(spec, known_hosts, replace=replace, inventory_hosts=inventory.hosts,
                            connect_timeout=timeout)
        except TransportError as exc:
            failed = True
            err.print(f"[red]{escape(spec.name)}[/]: {escape(exc.one_line())}", highlight=False)
            continue
        click.echo(f"{spec.name}\t{spec.address}\t{fp}")  # the library logs it (warning)
    if failed:
        sys.exit(EXIT_ERROR)  # SystemExit: `python -m harness` drops a return value
