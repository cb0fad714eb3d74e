"""`gate init [DIR]`: write a commented gate.yaml and hosts.ini to edit for a site."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import click

from harness.errors import UsageError


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(directory: str, force: bool) -> None:
    """Write a commented site config (gate.yaml) and inventory (hosts.ini) into DIR."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    templates = importlib.resources.files("harness.config") / "templates"
    written = []
    for name in ("gate.yaml", "hosts.ini"):
        dest = target / name
        if dest.exists() and not force:
            raise UsageError(f"{dest} exists", hint="pass --force to overwrite")
        dest.write_text((templates / name).read_text(encoding="utf-8"), encoding="utf-8")
        written.append(str(dest))
    for path in written:
        click.echo(path)
    click.echo("next: edit both, then `gate hosts trust HOST...` and `gate hosts check`", err=True)
