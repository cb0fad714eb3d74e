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
    from harness.config.template import template

    templates = importlib.resources.files("harness.config") / "templates"
    texts = {"gate.yaml": template(),  # from the config models: every key, its default
             "hosts.ini": (templates / "hosts.ini").read_text(encoding="utf-8")}
    for name in texts:
        if (target / name).exists() and not force:
            raise UsageError(f"{target / name} exists", hint="pass --force to overwrite")
    written = []
    for name, text in texts.items():
        dest = target / name
        dest.write_text(text, encoding="utf-8")
        written.append(str(dest))
    for path in written:
        click.echo(path)
    click.echo("next: edit both, then `gate hosts trust HOST...` and `gate hosts check`", err=True)
