"""`gate db upgrade`: apply store migrations (also done whenever the store is opened)."""

from __future__ import annotations

import click

from harness.cli.common import db_option


@click.group()
def db() -> None:
    """Store maintenance."""


@db.command()
@db_option
def upgrade(db_url: str | None) -> None:
    """Apply pending migrations; refuse a store written by a newer harness."""
    from harness.cli.context import open_store
    from harness.store.db import known_revisions

    store = open_store(db_url)
    _, head = known_revisions()
    click.echo(f"{store.url}: schema {store.revision()} (head {head})")
