"""Table definitions (SQLAlchemy Core). Migrations create them; this module only describes them."""

from __future__ import annotations

from sqlalchemy import (
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
