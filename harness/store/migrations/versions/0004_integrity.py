"""G3 verdict integrity: custom suites recorded on the run, the engines a run started,
each request's finish_reason, who signed from where

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    # A run of another suite than the packaged one (the harness's own tests): its path
    # and digest; such a run is never a gate's verdict. Empty for the packaged suite.
    op.add_column("run", sa.Column("suite", sa.Text, nullable=False, server_default=""))
    # The checks the suite declared for this config (its plan), so `n of m` is the plan's m.
    op.add_column("run", sa.Column("plan", sa.JSON))
    op.add_column("signoff", sa.Column("os_user", sa.String(200), nullable=False,
                                       server_default=""))
    op.add_column("signoff", sa.Column("hostname", sa.String(200), nullable=False,
                                       server_default=""))
    op.add_column("request", sa.Column("finish_reason", sa.String(32)))
    op.create_table(
        "engine_process",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("start_ticks", sa.BigInteger, nullable=False),
        sa.Column("arm", sa.String(32), nullable=False, server_default=""),
        sa.Column("layout", sa.String(64), nullable=False, server_default=""),
        sa.Column("instance", sa.Integer, nullable=False, server_default="0"),
        sa.Column("url", sa.Text, nullable=False, server_default=""),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("stopped_at", sa.Float),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("ix_engine_process_run_id", "engine_process", ["run_id"])


def downgrade() -> None:
    op.drop_table("engine_process")
    with op.batch_alter_table("request") as batch:
        batch.drop_column("finish_reason")
    with op.batch_alter_table("signoff") as batch:
        batch.drop_column("hostname")
        batch.drop_column("os_user")
    with op.batch_alter_table("run") as batch:
        batch.drop_column("plan")
        batch.drop_column("suite")
