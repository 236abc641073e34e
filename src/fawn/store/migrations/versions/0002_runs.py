"""runs and run events

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

from fawn.store.types import JSONType, UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column(
            "thread_id",
            sa.String(64),
            sa.ForeignKey("threads.thread_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("assistant_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("metadata", JSONType, nullable=False),
        sa.Column("kwargs", JSONType, nullable=False),
        sa.Column("multitask_strategy", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("stop_reason", sa.String(64), nullable=True),
        sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("total_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("cancel_action", sa.String(16), nullable=True),
        sa.Column("seq", sa.Integer, nullable=False),
    )
    op.create_index("ix_runs_thread_seq", "runs", ["thread_id", "seq"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index(
        "ux_runs_one_running_per_thread",
        "runs",
        ["thread_id"],
        unique=True,
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    )
    op.create_table(
        "run_events",
        sa.Column(
            "run_id",
            sa.String(64),
            sa.ForeignKey("runs.run_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("data", JSONType, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
