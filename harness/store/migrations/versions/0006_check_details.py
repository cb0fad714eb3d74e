"""Checks get details: their reasons as codes + parameters (harness.reasons)

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    # {"message" | "expected" | "measured": Reason JSON}: the report says a check's words
    # in its own language from these; the English columns stay what the CLI shows and
    # what older runs have. Old rows get {} (nothing structured: shown as stored).
    op.add_column("check", sa.Column("details", sa.JSON, nullable=False,
                                     server_default="{}"))


def downgrade() -> None:
    op.execute('ALTER TABLE "check" DROP COLUMN details')
