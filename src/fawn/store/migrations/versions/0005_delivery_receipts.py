"""delivery receipts: what each run presented and produced under outputs/

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from fawn.store.types import JSONType, UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_receipts",
        sa.Column(
            "run_id",
            sa.String(64),
            sa.ForeignKey("runs.run_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("presented", JSONType, nullable=False),
        sa.Column("produced", JSONType, nullable=False),
        sa.Column("matched", JSONType, nullable=False),
        sa.Column("satisfied", sa.Boolean, nullable=False),
        sa.Column("recovered", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_receipts")
