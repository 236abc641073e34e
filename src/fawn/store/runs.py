"""Run records: admission, status transitions, leases and recovery."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Row, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from fawn.store.database import Database
from fawn.store.errors import RunConflict, ThreadNotFound
from fawn.store.tables import run_events, runs, threads
from fawn.store.threads import ThreadStateSnapshot
from fawn.store.types import utcnow

RunStatus = Literal["pending", "running", "success", "error", "timeout", "interrupted"]
MultitaskStrategy = Literal["reject", "interrupt", "rollback", "enqueue"]
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
    owner: str | None
    lease_expires_at: datetime | None
    cancel_action: str | None
    seq: int


@dataclass(frozen=True, kw_only=True)
class RunEventEntry:
    """One journal entry of a run (``run_events``)."""

    kind: str
    data: dict[str, Any]
    created_at: datetime
    seq: int = 0


@dataclass(frozen=True, kw_only=True)
class NewRun:
    run_id: str
    thread_id: str
    assistant_id: str
    metadata: Mapping[str, Any]
    kwargs: Mapping[str, Any]
    multitask_strategy: MultitaskStrategy
    owner: str
    lease_seconds: float


@dataclass(frozen=True, kw_only=True)
class Admission:
    run: RunRecord
    #: runs that were active on the thread when this one was admitted, oldest first
    ahead: list[RunRecord]


def _record(row: Row[Any]) -> RunRecord:
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
        lease_expires_at=m["lease_expires_at"],
        cancel_action=m["cancel_action"],
        seq=m["seq"],
    )


class RunRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def admit(self, new: NewRun) -> Admission:
        """Insert a pending run unless ``reject`` forbids it; mark the thread busy.

        One transaction: on PostgreSQL the thread row is locked ``FOR UPDATE``, on SQLite the
        transaction holds the write lock from its start, so concurrent admissions on one
        thread are serialised and ``reject`` admits exactly one.
        """
        now = utcnow()
        async with self._db.engine.begin() as conn:
            lock = select(threads.c.thread_id).where(threads.c.thread_id == new.thread_id)
            if self._db.is_postgres:
                lock = lock.with_for_update()
            if (await conn.execute(lock)).first() is None:
                raise ThreadNotFound(new.thread_id)
            ahead_rows = (
                await conn.execute(
                    select(runs)
                    .where(runs.c.thread_id == new.thread_id, runs.c.status.in_(ACTIVE))
                    .order_by(runs.c.seq)
                )
            ).all()
            ahead = [_record(r) for r in ahead_rows]
            if ahead and new.multitask_strategy == "reject":
                raise RunConflict(
                    f"thread {new.thread_id} already has an active run ({ahead[0].run_id}); "
                    "multitask_strategy 'reject' refuses to start another"
                )
            seq = (
                await conn.execute(
                    select(func.coalesce(func.max(runs.c.seq), 0)).where(
                        runs.c.thread_id == new.thread_id
                    )
                )
            ).scalar_one()
            values = {
                "run_id": new.run_id,
                "thread_id": new.thread_id,
                "assistant_id": new.assistant_id,
                "status": "pending",
                "metadata": dict(new.metadata),
                "kwargs": dict(new.kwargs),
                "multitask_strategy": new.multitask_strategy,
                "created_at": now,
                "updated_at": now,
                "owner": new.owner,
                "lease_expires_at": now + timedelta(seconds=new.lease_seconds),
                "seq": int(seq) + 1,
            }
            await conn.execute(insert(runs).values(**values))
            await conn.execute(
                update(threads)
                .where(threads.c.thread_id == new.thread_id)
                .values(status="busy", updated_at=now)
            )
            row = (await conn.execute(select(runs).where(runs.c.run_id == new.run_id))).one()
        return Admission(run=_record(row), ahead=ahead)

    async def get(self, run_id: str, thread_id: str | None = None) -> RunRecord | None:
        query = select(runs).where(runs.c.run_id == run_id)
        if thread_id is not None:
            query = query.where(runs.c.thread_id == thread_id)
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return _record(row) if row is not None else None

    async def page(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None = None
    ) -> list[RunRecord]:
        query = select(runs).where(runs.c.thread_id == thread_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        query = query.order_by(runs.c.seq.desc()).limit(limit).offset(offset)
        async with self._db.engine.connect() as conn:
            return [_record(r) for r in (await conn.execute(query)).all()]

    async def count(self, thread_id: str, *, status: RunStatus | None = None) -> int:
        query = select(func.count()).select_from(runs).where(runs.c.thread_id == thread_id)
        if status is not None:
            query = query.where(runs.c.status == status)
        async with self._db.engine.connect() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def next_on_thread(self, thread_id: str, after_seq: int) -> RunRecord | None:
        """The thread's first run admitted after ``after_seq`` (its position in the thread)."""
        query = (
            select(runs)
            .where(runs.c.thread_id == thread_id, runs.c.seq > after_seq)
            .order_by(runs.c.seq)
            .limit(1)
        )
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return _record(row) if row is not None else None

    async def last_seq(self, thread_id: str) -> int:
        query = select(func.coalesce(func.max(runs.c.seq), 0)).where(runs.c.thread_id == thread_id)
        async with self._db.engine.connect() as conn:
            return int((await conn.execute(query)).scalar_one())

    async def active(self, thread_id: str) -> list[RunRecord]:
        """The thread's pending and running runs, in admission order."""
        return await self.find_active(thread_id=thread_id)

    async def start(self, run_id: str) -> bool:
        """pending → running. False when the run is no longer pending or another run of
        the thread is running (the unique index refuses it)."""
        try:
            async with self._db.engine.begin() as conn:
                result = await conn.execute(
                    update(runs)
                    .where(runs.c.run_id == run_id, runs.c.status == "pending")
                    .values(status="running", updated_at=utcnow())
                )
        except IntegrityError:
            return False
        return bool(result.rowcount)

    async def complete(
        self,
        run_id: str,
        thread_id: str,
        *,
        status: RunStatus,
        thread: ThreadStateSnapshot,
        error: str | None = None,
        stop_reason: str | None = None,
        usage: Usage | None = None,
        owner: str | None = None,
        delete_run: bool = False,
        journal: Sequence[RunEventEntry] = (),
    ) -> None:
        """Settle the thread row and make the run terminal (or delete it) in ONE transaction,
        so nobody sees the run finished while its thread still says ``busy``.

        The thread stays ``busy`` while another run of it is still active (queued).
        """
        now = utcnow()
        async with self._db.engine.begin() as conn:
            others = (
                await conn.execute(
                    select(func.count())
                    .select_from(runs)
                    .where(
                        runs.c.thread_id == thread_id,
                        runs.c.status.in_(ACTIVE),
                        runs.c.run_id != run_id,
                    )
                )
            ).scalar_one()
            await conn.execute(
                update(threads)
                .where(threads.c.thread_id == thread_id)
                .values(
                    values=thread.values,
                    interrupts=thread.interrupts,
                    status="busy" if others else thread.status,
                    error=None if others else thread.error,
                    updated_at=now,
                    state_updated_at=now,
                )
            )
            if delete_run:
                await conn.execute(delete(runs).where(runs.c.run_id == run_id))
                return
            values: dict[str, Any] = {
                "status": status,
                "error": error,
                "stop_reason": stop_reason,
                "updated_at": now,
                "lease_expires_at": None,
            }
            if usage is not None:
                values.update(
                    prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens,
                    total_tokens=usage.total_tokens,
                )
            query = update(runs).where(runs.c.run_id == run_id, runs.c.status.in_(ACTIVE))
            if owner is not None:
                query = query.where(runs.c.owner == owner)
            finished = await conn.execute(query.values(**values))
            if journal and finished.rowcount:
                await conn.execute(
                    insert(run_events),
                    [
                        {
                            "run_id": run_id,
                            "seq": seq,
                            "kind": entry.kind,
                            "data": entry.data,
                            "created_at": entry.created_at,
                        }
                        for seq, entry in enumerate(journal, start=1)
                    ],
                )

    async def events(self, run_id: str) -> list[RunEventEntry]:
        query = select(run_events).where(run_events.c.run_id == run_id).order_by(run_events.c.seq)
        async with self._db.engine.connect() as conn:
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

    async def delete(self, run_id: str) -> bool:
        async with self._db.engine.begin() as conn:
            result = await conn.execute(delete(runs).where(runs.c.run_id == run_id))
        return bool(result.rowcount)

    async def request_cancel(self, run_ids: Sequence[str], action: str) -> list[RunRecord]:
        """Durably ask for cancellation (any worker owning the run acts on it)."""
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(runs)
                .where(runs.c.run_id.in_(list(run_ids)), runs.c.status.in_(ACTIVE))
                .values(cancel_action=action, updated_at=utcnow())
            )
            rows = (await conn.execute(select(runs).where(runs.c.run_id.in_(list(run_ids))))).all()
        return [_record(r) for r in rows]

    async def find_active(
        self,
        *,
        thread_id: str | None = None,
        run_ids: Sequence[str] | None = None,
        status: Sequence[RunStatus] = ACTIVE,
    ) -> list[RunRecord]:
        """Runs in ``status`` (pending or running by default), oldest first."""
        query = select(runs).where(runs.c.status.in_(list(status)))
        if thread_id is not None:
            query = query.where(runs.c.thread_id == thread_id)
        if run_ids is not None:
            query = query.where(runs.c.run_id.in_(list(run_ids)))
        async with self._db.engine.connect() as conn:
            return [_record(r) for r in (await conn.execute(query.order_by(runs.c.seq))).all()]

    async def renew_leases(
        self, owner: str, run_ids: Sequence[str], seconds: float
    ) -> list[RunRecord]:
        """Extend our leases; returns the rows (so the caller sees cancel requests)."""
        if not run_ids:
            return []
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(runs)
                .where(
                    runs.c.run_id.in_(list(run_ids)),
                    runs.c.owner == owner,
                    runs.c.status.in_(ACTIVE),
                )
                .values(lease_expires_at=utcnow() + timedelta(seconds=seconds))
            )
            rows = (await conn.execute(select(runs).where(runs.c.run_id.in_(list(run_ids))))).all()
        return [_record(r) for r in rows]

    async def recover_orphans(
        self, *, reason: str, is_orphan: Callable[[RunRecord], bool]
    ) -> list[RunRecord]:
        """Mark the active runs ``is_orphan`` picks as ``error`` (stop reason ``orphaned``) and
        free their threads. The caller decides what makes a run an orphan (a lease that
        expired, an owner process that is gone); the rows are locked while it decides."""
        now = utcnow()
        async with self._db.engine.begin() as conn:
            candidates = select(runs).where(runs.c.status.in_(ACTIVE))
            if self._db.is_postgres:
                candidates = candidates.with_for_update(skip_locked=True)
            found = [_record(r) for r in (await conn.execute(candidates)).all()]
            orphans = [r for r in found if is_orphan(r)]
            if not orphans:
                return []
            ids = [r.run_id for r in orphans]
            await conn.execute(
                update(runs)
                .where(runs.c.run_id.in_(ids), runs.c.status.in_(ACTIVE))
                .values(
                    status="error",
                    error=reason,
                    stop_reason="orphaned",
                    updated_at=now,
                    lease_expires_at=None,
                )
            )
            thread_ids = sorted({r.thread_id for r in orphans})
            still_active = select(runs.c.thread_id).where(
                runs.c.thread_id.in_(thread_ids), runs.c.status.in_(ACTIVE)
            )
            await conn.execute(
                update(threads)
                .where(
                    threads.c.thread_id.in_(thread_ids),
                    threads.c.status == "busy",
                    threads.c.thread_id.not_in(still_active),
                )
                .values(
                    status="error",
                    error={"error": "RunOrphaned", "message": reason},
                    updated_at=now,
                )
            )
        return orphans
