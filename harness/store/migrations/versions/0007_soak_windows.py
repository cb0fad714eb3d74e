"""G4: soak_window (one summarised window of a soak, stored once per run and index)

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    # A 72 h soak's windows are pulled as they close and again after a resume: the unique
    # (run_id, idx) makes the second pull an update (harness/store/windows.py), and uid
    # names each row across stores, as run.uid does runs.
    op.create_table(
        "soak_window",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("uid", sa.String(32), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("start_s", sa.Float, nullable=False),
        sa.Column("length_s", sa.Float, nullable=False),
        sa.Column("requests", sa.Integer, nullable=False),
        sa.Column("errors", sa.JSON, nullable=False),
        sa.Column("ttft_p50_s", sa.Float),
        sa.Column("ttft_p99_s", sa.Float),
        sa.Column("tpot_p50_s", sa.Float),
        sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("external_hit_tokens", sa.Float),
        sa.Column("device_read_bytes", sa.Float),
        sa.Column("kv_volume_read_bytes", sa.Float),
        sa.Column("engine_rss_bytes", sa.Float),
        sa.Column("engine_restarts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("counters", sa.JSON, nullable=False),
        sa.Column("pulled_at", sa.Float, nullable=False),
        sa.UniqueConstraint("run_id", "idx", name="uq_soak_window_run_idx"),
    )
    op.create_index("ix_soak_window_uid", "soak_window", ["uid"], unique=True)
    op.create_index("ix_soak_window_run_id", "soak_window", ["run_id"])


def downgrade() -> None:
    op.drop_table("soak_window")
