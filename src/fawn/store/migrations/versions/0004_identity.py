"""users, sessions and API keys; an owner on every thread and run

Existing threads and runs belong to ``default``, the single user of a server without
authentication; the first admin adopts them (see ``fawn.gateway.auth.adoption``).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

from fawn.store.types import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("password_hash", sa.Text, nullable=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_version", sa.Integer, nullable=False, server_default="0"),
        sa.Column("needs_setup", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("display_name", sa.String(255), nullable=True),
        sa.Column("oauth_provider", sa.String(64), nullable=True),
        sa.Column("oauth_subject", sa.String(255), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ux_users_email", "users", ["email"], unique=True)
    op.create_index("ux_users_oauth", "users", ["oauth_provider", "oauth_subject"], unique=True)
    op.create_index("ix_users_role", "users", ["role"])
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.String(64), primary_key=True),
        sa.Column(
            "user_id",
            sa.String(64),
            sa.ForeignKey("users.user_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_sessions_user", "sessions", ["user_id"])
    op.create_index("ix_sessions_expires", "sessions", ["expires_at"])
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column(
            "user_id",
            sa.String(64),
            sa.ForeignKey("users.user_id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_api_keys_user", "api_keys", ["user_id"])
    with op.batch_alter_table("threads") as batch:
        batch.add_column(
            sa.Column("user_id", sa.String(255), nullable=False, server_default="default")
        )
    op.create_index("ix_threads_user_created", "threads", ["user_id", "created_at"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("user_id", sa.String(255), nullable=True))
