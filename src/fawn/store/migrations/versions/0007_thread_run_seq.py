"""threads.run_seq: the last position given to a run of the thread, never reused

A run's ``seq`` is its position in its thread (thread streams follow runs by it). Taken as
one more than the highest ``seq`` among the thread's runs, it was reused once that run was
deleted (a rollback deletes runs): a follower waiting for the run after a deleted one missed
the next. The thread row now keeps the last position given out.

Revision ID: 0007
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("run_seq", sa.Integer, nullable=False, server_default="0"))
    op.execute(
        "UPDATE threads SET run_seq = COALESCE("
        "(SELECT MAX(runs.seq) FROM runs WHERE runs.thread_id = threads.thread_id), 0)"
    )


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("run_seq")
