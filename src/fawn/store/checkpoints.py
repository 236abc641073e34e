"""LangGraph checkpointers: the async SQLite saver by default, the PostgreSQL saver at scale."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite
import psycopg
import psycopg_pool
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from fawn.config.settings import DatabaseSettings
from fawn.store.database import libpq_url, normalise_url

Saver = BaseCheckpointSaver[Any]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: how long a checkpoint read or write keeps retrying through a PostgreSQL outage (a run's
#: owner stops the run itself after ``runs.outage_tolerance_seconds``, which cancels it)
OUTAGE_RETRY_SECONDS = 300.0
_RETRY_FIRST = 0.1
_RETRY_MAX = 2.0
#: how long the pool waits for a connection (and keeps reconnecting) before giving up
POOL_WAIT_SECONDS = 3.0


class OutageTolerantPostgresSaver(AsyncPostgresSaver):
    """The PostgreSQL saver, retrying a read or write that failed because the database could
    not be reached (a restart, a short outage) instead of failing the run. Every retried
    operation is idempotent: checkpoints and writes are upserts keyed by their ids."""

    retry_seconds = OUTAGE_RETRY_SECONDS

    async def _retrying(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + self.retry_seconds
        delay = _RETRY_FIRST
        while True:
            try:
                return await op()
            except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("checkpoint %s: database unreachable (%s); retrying", what, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        base = AsyncPostgresSaver.aget_tuple
        return await self._retrying("read", lambda: base(self, config))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The writes a ``delta``-mode read replays (``checkpoints.mode``): a read too."""
        base = AsyncPostgresSaver.aget_delta_channel_history
        return await self._retrying("read", lambda: base(self, config=config, channels=channels))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        base = AsyncPostgresSaver.aput
        return await self._retrying(
            "write", lambda: base(self, config, checkpoint, metadata, new_versions)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        base = AsyncPostgresSaver.aput_writes
        await self._retrying("writes", lambda: base(self, config, writes, task_id, task_path))


@asynccontextmanager
async def open_checkpointer(settings: DatabaseSettings, data_dir: Path) -> AsyncIterator[Saver]:
    """Open (and set up) the checkpointer matching the database settings.

    SQLite checkpoints live in their own file (``checkpoints.db``) beside ``fawn.db``: both
    files are single-writer, and splitting them keeps checkpoint writes from queueing behind
    run bookkeeping.
    """
    if settings.url is None or settings.url.startswith("sqlite"):
        path = data_dir / "checkpoints.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path)
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.execute("PRAGMA busy_timeout=30000")
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
            yield saver
        finally:
            await conn.close()
        return
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        libpq_url(normalise_url(settings.url)),
        min_size=1,
        max_size=settings.pool_size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        # a connection is checked when it is handed out: one the server dropped (a restart)
        # is replaced instead of failing its first statement
        check=AsyncConnectionPool.check_connection,
        # through an outage, waiting for a connection and reconnecting give up soon, so
        # that the saver's own retries ask again: the pool's reconnection backoff (doubling
        # up to minutes) would otherwise keep runs waiting long after the database is back
        timeout=POOL_WAIT_SECONDS,
        reconnect_timeout=POOL_WAIT_SECONDS,
        open=False,
    )
    await pool.open()
    try:
        pg_saver = OutageTolerantPostgresSaver(pool)
        await pg_saver.setup()
        yield pg_saver
    finally:
        await pool.close()


async def copy_thread(saver: Saver, source: str, target: str) -> None:
    """Copy every checkpoint (and pending write) of ``source`` to ``target``, oldest first.

    Works on any saver through its public interface, so a copy keeps its history and the
    checkpoint ids, and both threads then evolve independently.
    """
    tuples = [t async for t in saver.alist({"configurable": {"thread_id": source}})]
    for item in reversed(tuples):
        ns = item.config["configurable"].get("checkpoint_ns", "")
        parent_id = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        config: RunnableConfig = {
            "configurable": {
                "thread_id": target,
                "checkpoint_ns": ns,
                **({"checkpoint_id": parent_id} if parent_id else {}),
            }
        }
        metadata = cast(CheckpointMetadata, dict(item.metadata))
        stored = await saver.aput(
            config, item.checkpoint, metadata, dict(item.checkpoint["channel_versions"])
        )
        await put_pending_writes(saver, stored, item.pending_writes or [])


async def put_pending_writes(
    saver: Saver, config: RunnableConfig, pending: Sequence[tuple[str, str, Any]]
) -> None:
    """Store a checkpoint's pending writes (as a saver lists them) under ``config``.

    A saver lists them in the order a step applies them (by task path, task id, index) but
    does not give the task paths back; each task gets one that sorts in the listed order, so
    a replay of the copy (the ``delta`` checkpoint mode rebuilds ``messages`` from the
    writes) applies them in the same order as the original.
    """
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in pending:
        by_task.setdefault(task_id, []).append((channel, value))
    for position, (task_id, writes) in enumerate(by_task.items()):
        await saver.aput_writes(config, writes, task_id, f"~copy:{position:06d}")
