"""load generator: benchmark (one load phase), request (one per request), series

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"


def upgrade() -> None:
    op.create_table(
        "benchmark",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("arm", sa.String(32), nullable=False, server_default=""),
        sa.Column("layout", sa.String(64), nullable=False, server_default=""),
        sa.Column("tier", sa.Integer, nullable=False, server_default="0"),
        sa.Column("repetition", sa.Integer, nullable=False, server_default="0"),
        sa.Column("phase", sa.String(16), nullable=False, server_default="measured"),
        sa.Column("driver", sa.String(32), nullable=False, server_default="gate"),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("summary", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, server_default="RUNNING"),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("duration", sa.Float),
    )
    op.create_index("ix_benchmark_run_id", "benchmark", ["run_id"])
    op.create_table(
        "request",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("benchmark_id", sa.Integer, sa.ForeignKey("benchmark.id"), nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("instance", sa.Integer, nullable=False, server_default="0"),
        sa.Column("warmup", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("scheduled", sa.Float, nullable=False),
        sa.Column("sent", sa.Float),
        sa.Column("ttft", sa.Float),
        sa.Column("ttft_text", sa.Float),
        sa.Column("e2el", sa.Float),
        sa.Column("prompt_tokens", sa.Integer),
        sa.Column("output_tokens", sa.Integer),
        sa.Column("usage_reported", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("status", sa.Integer),
        sa.Column("error_kind", sa.String(32)),
        sa.Column("error", sa.Text),
        sa.Column("chunks", sa.LargeBinary),
    )
    op.create_index("ix_request_benchmark_id", "request", ["benchmark_id"])
    op.create_table(
        "series",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("benchmark_id", sa.Integer, sa.ForeignKey("benchmark.id")),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("labels", sa.JSON, nullable=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("value", sa.Float, nullable=False),
    )
    op.create_index("ix_series_run_id", "series", ["run_id"])
    op.create_index("ix_series_benchmark_id", "series", ["benchmark_id"])


def downgrade() -> None:
    op.drop_table("series")
    op.drop_table("request")
    op.drop_table("benchmark")
