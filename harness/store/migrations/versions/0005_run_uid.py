"""Runs get a globally unique id and the config values set on the command line

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"


def upgrade() -> None:
    # run.id is unique in one store only; results from many sites will merge, so every
    # run gets a uuid4 (hex) at creation. Existing runs get theirs here. The server
    # default only lets SQLite add a NOT NULL column (no table rebuild, which would need
    # foreign keys off outside the migration's transaction); the unique index refuses a
    # second run written without one.
    op.add_column("run", sa.Column("uid", sa.String(32), nullable=False, server_default=""))
    bind = op.get_bind()
    ids = bind.execute(sa.text("SELECT id FROM run ORDER BY id")).scalars().all()
    for run_id in ids:
        bind.execute(sa.text("UPDATE run SET uid = :uid WHERE id = :id"),
                     {"uid": uuid.uuid4().hex, "id": run_id})
    op.create_index("ix_run_uid", "run", ["uid"], unique=True)
    # `gate run --set dotted.key=value`: what was overridden, as a JSON list of strings.
    op.add_column("run", sa.Column("overrides", sa.JSON, nullable=False,
                                   server_default="[]"))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35, PostgreSQL): a batch table rebuild would drop
    # `run`, which the foreign keys of every other table refuse while they are on.
    op.drop_index("ix_run_uid", "run")
    op.execute("ALTER TABLE run DROP COLUMN overrides")
    op.execute("ALTER TABLE run DROP COLUMN uid")
