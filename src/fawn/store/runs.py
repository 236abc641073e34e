"""Run records: the stored run, its journal, and the reads every part of the lifecycle shares.

Transitions (admission, claim, cancellation, completion, recovery) are in
:mod:`fawn.store.run_queue`; workers and their heartbeats in :mod:`fawn.store.workers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, func, select

from fawn.store.database import Database
from fawn.store.scope import Scope
from fawn.store.tables import run_events, runs, threads
from fawn.store.threads import scope_conditions

RunStatus = Literal["pending", "running", "success", "error", "timeout", "interrupted"]
MultitaskStrategy = Literal["reject", "interrupt", "rollback", "enqueue"]
#: what a cancel asks of a run: stop where it is, or stop and restore the state before it
CancelAction = Literal["interrupt", "rollback"]
ACTIVE: tuple[RunStatus, ...] = ("pending", "running")
TERMINAL: tuple[RunStatus, ...] = ("success", "error", "timeout", "interrupted")


@dataclass(frozen=True, kw_only=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    run_id: str
    thread_id: str
    assistant_id: str
    status: RunStatus
    metadata: dict[str, Any]
    kwargs: dict[str, Any]
    multitask_strategy: MultitaskStrategy
    created_at: datetime
    updated_at: datetime
    error: str | None
    stop_reason: str | None
    usage: Usage
    #: the worker executing the run; None while it waits in its thread's queue
    owner: str | None
    cancel_action: CancelAction | None
    #: position in its thread's queue (1, 2, ...)
    seq: int
    started_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class RunEventEntry:
    """One journal entry of a run (``run_events``)."""

    kind: str
    data: dict[str, Any]
    created_at: datetime
    seq: int = 0


def run_record(row: Row[Any]) -> RunRecord:
    m = row._mapping
    return RunRecord(
        run_id=m["run_id"],
        thread_id=m["thread_id"],
        assistant_id=m["assistant_id"],
        status=m["status"],
        metadata=m["metadata"] or {},
        kwargs=m["kwargs"] or {},
        multitask_strategy=m["multitask_strategy"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        error=m["error"],
        stop_reason=m["stop_reason"],
        usage=Usage(
            prompt_tokens=m["prompt_tokens"],
            completion_tokens=m["completion_tokens"],
            total_tokens=m["total_tokens"],
        ),
        owner=m["owner"],
        cancel_action=m["cancel_action"],
        seq=m["seq"],
        started_at=m["started_at"],
    )


class RunRepository:
    """Reads of run records and journals."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, run_id: str, thread_id: str | None = None) -> RunRecord | None:
        query = select(runs).where(runs.c.run_id == run_id)
        if thread_id is not None:
            query = query.where(runs.c.thread_id == thread_id)
        async with self._db.connect() as conn:
            row = (await conn.execute(query)).first()
        return run_record(row) if row is not None else None

    async def page(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None = None
    ) -> list[RunRecord]:
        query = select(runs).where(runs.c.thread_id == thread_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        query = query.order_by(runs.c.seq.desc()).limit(limit).offset(offset)
        async with self._db.connect() as conn:
            return [run_record(r) for r in (await conn.execute(query)).all()]

    async def count(self, thread_id: str, *, status: RunStatus | None = None) -> int:
        query = select(func.count()).select_from(runs).where(runs.c.thread_id == thread_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        async with self._db.connect() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def next_on_thread(self, thread_id: str, after_seq: int) -> RunRecord | None:
        """The thread's first run admitted after ``after_seq`` (its position in the thread)."""
        query = (
            select(runs)
            .where(runs.c.thread_id == thread_id, runs.c.seq > after_seq)
            .order_by(runs.c.seq)
            .limit(1)
        )
        async with self._db.connect() as conn:
            row = (await conn.execute(query)).first()
        return run_record(row) if row is not None else None

    async def last_seq(self, thread_id: str) -> int:
        query = select(func.coalesce(func.max(runs.c.seq), 0)).where(runs.c.thread_id == thread_id)
        async with self._db.connect() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def active(self, thread_id: str) -> list[RunRecord]:
        """The thread's pending and running runs, in admission order."""
        return await self.find_active(thread_id=thread_id)

    async def find_active(
        self,
        *,
        thread_id: str | None = None,
        run_ids: Sequence[str] | None = None,
        status: Sequence[RunStatus] = ACTIVE,
        owner: str | None = None,
        scope: Scope | None = None,
    ) -> list[RunRecord]:
        """Runs in ``status`` (pending or running by default), oldest first; with ``scope``,
        only runs of threads the scope reaches (the condition is part of the query)."""
        query = select(runs).where(runs.c.status.in_(list(status)))
        if scope is not None:
            reached = select(threads.c.thread_id).where(
                *scope_conditions(scope, postgres=self._db.is_postgres)
            )
            query = query.where(runs.c.thread_id.in_(reached))
        if thread_id is not None:
            query = query.where(runs.c.thread_id == thread_id)
        if run_ids is not None:
            query = query.where(runs.c.run_id.in_(list(run_ids)))
        if owner is not None:
            query = query.where(runs.c.owner == owner)
        async with self._db.connect() as conn:
            rows = (await conn.execute(query.order_by(runs.c.created_at, runs.c.seq))).all()
        return [run_record(r) for r in rows]

    async def finished_entries(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The ``run_finished`` journal entry's data of each of ``run_ids`` that has one."""
        if not run_ids:
            return {}
        query = select(run_events.c.run_id, run_events.c.data).where(
            run_events.c.run_id.in_(list(run_ids)), run_events.c.kind == "run_finished"
        )
        async with self._db.connect() as conn:
            rows = (await conn.execute(query)).all()
        return {str(r[0]): dict(r[1] or {}) for r in rows}

    async def events(self, run_id: str) -> list[RunEventEntry]:
        query = select(run_events).where(run_events.c.run_id == run_id).order_by(run_events.c.seq)
        async with self._db.connect() as conn:
            rows = (await conn.execute(query)).all()
        return [
            RunEventEntry(
                kind=r._mapping["kind"],
                data=r._mapping["data"],
                created_at=r._mapping["created_at"],
                seq=r._mapping["seq"],
            )
            for r in rows
        ]
