"""G3: cell (one layout x tier decision)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"


def upgrade() -> None:
    op.create_table(
        "cell",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("layout", sa.String(64), nullable=False),
        sa.Column("tier", sa.Integer, nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("repetitions", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_baseline", sa.Integer, nullable=False, server_default="0"),
        sa.Column("n_accelerated", sa.Integer, nullable=False, server_default="0"),
        sa.Column("ttft_p50_baseline", sa.Float),
        sa.Column("ttft_p50_accelerated", sa.Float),
        sa.Column("drop", sa.Float),
        sa.Column("drop_lo", sa.Float),
        sa.Column("drop_hi", sa.Float),
        sa.Column("thr_baseline", sa.Float),
        sa.Column("thr_accelerated", sa.Float),
        sa.Column("gain", sa.Float),
        sa.Column("gain_lo", sa.Float),
        sa.Column("gain_hi", sa.Float),
        sa.Column("confidence", sa.Float, nullable=False, server_default="0.95"),
        sa.Column("rule", sa.Text, nullable=False, server_default=""),
        sa.Column("details", sa.JSON, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.UniqueConstraint("run_id", "layout", "tier"),
    )
    op.create_index("ix_cell_run_id", "cell", ["run_id"])


def downgrade() -> None:
    op.drop_table("cell")
