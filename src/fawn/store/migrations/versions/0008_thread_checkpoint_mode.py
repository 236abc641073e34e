"""threads.checkpoint_mode: the checkpoint mode a thread was created in

``checkpoints.mode`` (``full`` or ``delta``) decides how a thread's checkpoints keep its
messages; a server in one mode would misread a thread written in the other. The thread row
records its mode, so that such a server refuses the thread (409) instead. Every thread
created before this revision was written in ``full`` mode, the only one there was.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(
            sa.Column("checkpoint_mode", sa.String(8), nullable=False, server_default="full")
        )


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("checkpoint_mode")
