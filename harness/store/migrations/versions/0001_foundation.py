"""foundation: site, campaign, run, run_lock, check, host_fact, event, signoff, artifact

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "site",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("customer", sa.String(200), nullable=False, server_default=""),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "campaign",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("site_id", sa.Integer, sa.ForeignKey("site.id"), nullable=False),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "run",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("gate", sa.String(4)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(16)),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        sa.Column("partial", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("checks_selected", sa.Integer, nullable=False, server_default="0"),
        sa.Column("checks_total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("forced", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("needs_signoff", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("trigger", sa.String(16), nullable=False, server_default="manual"),
        sa.Column("simulated", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("config_hash", sa.String(64), nullable=False, server_default=""),
        sa.Column("config_json", sa.JSON, nullable=False),
        sa.Column("harness_version", sa.String(32), nullable=False, server_default=""),
        sa.Column("operator", sa.String(200), nullable=False, server_default=""),
        sa.Column("hosts", sa.JSON, nullable=False),
        sa.Column("args", sa.JSON, nullable=False),
        sa.Column("pid", sa.Integer),
        sa.Column("hostname", sa.String(200), nullable=False, server_default=""),
        sa.Column("artifact_dir", sa.Text, nullable=False, server_default=""),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
        sa.Column("heartbeat_at", sa.Float),
    )
    op.create_index("ix_run_campaign_id", "run", ["campaign_id"])
    op.create_index("ix_run_gate", "run", ["gate"])
    op.create_table(
        "run_lock",
        sa.Column(
            "campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), primary_key=True
        ),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("hostname", sa.String(200), nullable=False),
        sa.Column("acquired_at", sa.Float, nullable=False),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
    )
    op.create_table(
        "check",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("nodeid", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False, server_default=""),
        sa.Column("host", sa.String(200)),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False, server_default=""),
        sa.Column("expected", sa.Text, nullable=False, server_default=""),
        sa.Column("measured", sa.Text, nullable=False, server_default=""),
        sa.Column("stage", sa.String(64), nullable=False, server_default="call"),
        sa.Column("duration", sa.Float, nullable=False, server_default="0"),
        sa.Column("finished_at", sa.Float, nullable=False),
    )
    op.create_index("ix_check_run_id", "check", ["run_id"])
    op.create_table(
        "host_fact",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("value", sa.JSON),
        sa.Column("simulated", sa.Boolean, nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_host_fact_run_id", "host_fact", ["run_id"])
    op.create_table(
        "event",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("host", sa.String(200)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False, server_default=""),
        sa.Column("duration", sa.Float, nullable=False, server_default="0"),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_event_run_id", "event", ["run_id"])
    op.create_table(
        "signoff",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_signoff_run_id", "signoff", ["run_id"])
    op.create_table(
        "artifact",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(64), nullable=False, server_default=""),
        sa.Column("host", sa.String(200)),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_index("ix_artifact_run_id", "artifact", ["run_id"])


def downgrade() -> None:
    for table in ("artifact", "signoff", "event", "host_fact", "check", "run_lock", "run",
                  "campaign", "site"):
        op.drop_table(table)
