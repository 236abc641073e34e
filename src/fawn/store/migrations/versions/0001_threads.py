"""threads

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

from fawn.store.types import JSONType, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("thread_id", sa.String(64), primary_key=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("state_updated_at", UTCDateTime(), nullable=False),
        sa.Column("metadata", JSONType, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config", JSONType, nullable=False),
        sa.Column("values", JSONType, nullable=True),
        sa.Column("interrupts", JSONType, nullable=False),
        sa.Column("error", JSONType, nullable=True),
    )
    op.create_index("ix_threads_created_at", "threads", ["created_at"])
    op.create_index("ix_threads_updated_at", "threads", ["updated_at"])
    op.create_index("ix_threads_status", "threads", ["status"])
