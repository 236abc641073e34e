"""the run queue and worker ownership

A pending run belongs to its thread's queue, not to a worker: it carries what executing it
needs (``spec``), ``owner`` is set when a worker claims it (``started_at``), and workers
register in ``workers`` with a heartbeat counter
that peers watch. Per-run leases (``lease_expires_at``) are gone: a run lives as long as its
owner does.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

from fawn.store.types import JSONType, UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE runs SET owner = NULL WHERE status = 'pending'")
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        # SQLite rebuilds the table to drop a column, and dropping the old one cascades to
        # the journal (foreign keys are on): keep the journal aside meanwhile.
        op.execute("CREATE TEMP TABLE keep_run_events AS SELECT * FROM run_events")
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("started_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("spec", JSONType, nullable=True))
        batch.drop_column("lease_expires_at")
    if sqlite:
        op.execute("INSERT INTO run_events SELECT * FROM keep_run_events")
        op.execute("DROP TABLE keep_run_events")
    op.create_index("ix_runs_queue", "runs", ["status", "created_at"])
    op.create_table(
        "workers",
        sa.Column("worker_id", sa.String(128), primary_key=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", UTCDateTime(), nullable=False),
        sa.Column("beat", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
    )
