"""Alembic environment: the harness always passes an open connection in."""

from __future__ import annotations

from alembic import context

from harness.store.schema import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - `alembic` CLI use without the harness
    from sqlalchemy import create_engine

    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "sqlite://")
    connection = engine.connect()

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
