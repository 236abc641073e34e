"""Table definitions (SQLAlchemy Core). Migrations create them; this module only describes them."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

from fawn.store.types import JSONType, UTCDateTime

metadata = MetaData()

threads = Table(
    "threads",
    metadata,
    Column("thread_id", String(64), primary_key=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("state_updated_at", UTCDateTime(), nullable=False),
    Column("metadata", JSONType, nullable=False),
    Column("status", String(16), nullable=False),
    Column("config", JSONType, nullable=False),
    Column("values", JSONType, nullable=True),
    Column("interrupts", JSONType, nullable=False),
    Column("error", JSONType, nullable=True),
    # the owner: a user id, or "default" (the single user of a server without authentication)
    Column("user_id", String(255), nullable=False, server_default="default"),
    # the last position (``runs.seq``) given to a run of the thread: never reused
    Column("run_seq", Integer, nullable=False, server_default="0"),
    # the checkpoint mode (``checkpoints.mode``) the thread was created in: full or delta
    Column("checkpoint_mode", String(8), nullable=False, server_default="full"),
    Index("ix_threads_user_created", "user_id", "created_at"),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column(
        "thread_id",
        String(64),
        ForeignKey("threads.thread_id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("assistant_id", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("metadata", JSONType, nullable=False),
    Column("kwargs", JSONType, nullable=False),
    Column("multitask_strategy", String(16), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("error", Text, nullable=True),
    Column("stop_reason", String(64), nullable=True),
    Column("prompt_tokens", Integer, nullable=False, server_default="0"),
    Column("completion_tokens", Integer, nullable=False, server_default="0"),
    Column("total_tokens", Integer, nullable=False, server_default="0"),
    # the worker executing the run (set when a worker claims it; a pending run has none)
    Column("owner", String(128), nullable=True),
    Column("cancel_action", String(16), nullable=True),
    Column("seq", Integer, nullable=False),
    Column("started_at", UTCDateTime(), nullable=True),
    # everything needed to execute the run, for whichever worker claims it (never sent out)
    Column("spec", JSONType, nullable=True),
    # who created the run (the worker that executes it is ``owner``)
    Column("user_id", String(255), nullable=True),
    Index("ix_runs_thread_seq", "thread_id", "seq"),
    Index("ix_runs_status", "status"),
    Index("ix_runs_queue", "status", "created_at"),
    # The database, not a Python dict, guarantees one executing run per thread.
    Index(
        "ux_runs_one_running_per_thread",
        "thread_id",
        unique=True,
        sqlite_where=text("status = 'running'"),
        postgresql_where=text("status = 'running'"),
    ),
)

run_events = Table(
    "run_events",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("data", JSONType, nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

#: A run's delivery receipt, written with its terminal status (orphans get an empty one).
run_receipts = Table(
    "run_receipts",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("presented", JSONType, nullable=False),
    Column("produced", JSONType, nullable=False),
    Column("matched", JSONType, nullable=False),
    Column("satisfied", Boolean, nullable=False),
    Column("recovered", Boolean, nullable=False, server_default=text("false")),
    Column("created_at", UTCDateTime(), nullable=False),
)

#: One row per gateway process. ``beat`` grows by one at every renewal: peers judge liveness
#: by watching it change, never by comparing clocks.
workers = Table(
    "workers",
    metadata,
    Column("worker_id", String(128), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("heartbeat_at", UTCDateTime(), nullable=False),
    Column("beat", Integer, nullable=False),
    # active | draining | stopped | dead
    Column("state", String(16), nullable=False),
)

users = Table(
    "users",
    metadata,
    Column("user_id", String(64), primary_key=True),
    Column("email", String(320), nullable=False),
    Column("password_hash", Text, nullable=True),
    Column("role", String(16), nullable=False),
    Column("token_version", Integer, nullable=False, server_default="0"),
    Column("needs_setup", Boolean, nullable=False),
    Column("disabled", Boolean, nullable=False),
    Column("display_name", String(255), nullable=True),
    Column("oauth_provider", String(64), nullable=True),
    Column("oauth_subject", String(255), nullable=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Index("ux_users_email", "email", unique=True),
    Index("ux_users_oauth", "oauth_provider", "oauth_subject", unique=True),
    Index("ix_users_role", "role"),
)

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("user_id", String(64), ForeignKey("users.user_id", ondelete="CASCADE"), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Index("ix_sessions_user", "user_id"),
    Index("ix_sessions_expires", "expires_at"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("user_id", String(64), ForeignKey("users.user_id", ondelete="CASCADE"), nullable=False),
    Column("name", String(128), nullable=False),
    Column("secret_hash", String(64), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=True),
    Column("revoked_at", UTCDateTime(), nullable=True),
    Index("ix_api_keys_user", "user_id"),
)
