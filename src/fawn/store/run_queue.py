"""Run transitions: every change of a run's status is one transaction here.

Each thread has a queue: its active runs in ``seq`` order. The first active run of a thread is
the only one that may run; it is claimed (``pending`` → ``running``) by whichever worker gets
to it first, so queued work survives the worker that admitted it. Every transition that looks
at a thread's queue locks the thread row first (``SELECT … FOR UPDATE`` on PostgreSQL; SQLite
transactions take the write lock at ``BEGIN IMMEDIATE``), so admission, claim, cancellation
and completion of one thread's runs are serialised, whatever worker runs them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Row, and_, delete, exists, func, insert, or_, select, update
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.orm import aliased

from fawn.config.settings import CheckpointMode
from fawn.store.database import Database
from fawn.store.errors import CheckpointModeMismatch, RunConflict, StoreError, ThreadNotFound
from fawn.store.receipts import DeliveryReceipt, backfill_receipts, write_receipt
from fawn.store.runs import (
    ACTIVE,
    CancelAction,
    MultitaskStrategy,
    RunEventEntry,
    RunRecord,
    RunStatus,
    Usage,
    run_record,
)
from fawn.store.scope import SYSTEM, Scope
from fawn.store.tables import run_events, runs, threads
from fawn.store.threads import ThreadStateSnapshot, ThreadStatus, scope_conditions

#: what became of a run that was settled without running to its end
SettledStatus = RunStatus | Literal["deleted"]


class UnstorableValue(StoreError):
    """The database refused a value (PostgreSQL's JSONB refuses NUL characters, say)."""

    code = "unstorable_value"


@dataclass(frozen=True, kw_only=True)
class NewRun:
    run_id: str
    thread_id: str
    assistant_id: str
    metadata: Mapping[str, Any]
    kwargs: Mapping[str, Any]
    multitask_strategy: MultitaskStrategy
    #: what executing it needs (the request unredacted), read back by the claiming worker
    spec: Mapping[str, Any]
    #: who asked for it (the authenticated caller)
    user_id: str | None = None
    #: server-owned metadata merged into the thread's at admission (graph_id, assistant_id)
    thread_stamp: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Claimed:
    run: RunRecord
    spec: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Settled:
    """A run ended in the transaction that decided so (it had not started)."""

    run: RunRecord
    status: SettledStatus


@dataclass(frozen=True, kw_only=True)
class Admitted:
    run: RunRecord
    #: earlier runs of the thread that had not started: ended by the multitask strategy
    settled: list[Settled]
    #: earlier runs that are executing: marked for cancellation, their owners must stop them
    marked: list[RunRecord]


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    settled: list[Settled]
    marked: list[RunRecord]


@dataclass(frozen=True, kw_only=True)
class Completion:
    """What a finished run leaves behind, written in one transaction."""

    run_id: str
    thread_id: str
    owner: str
    status: RunStatus
    error: str | None
    stop_reason: str | None
    usage: Usage
    #: the thread's latest values and pending interrupts; None keeps what the row holds
    thread: ThreadStateSnapshot | None
    thread_error: Any
    #: entries appended to the journal with the terminal status
    journal: Sequence[RunEventEntry]
    #: the pre-run state has been restored (the run is deleted instead of finished)
    rolled_back: bool
    #: the delivery receipt, written with the terminal status (kept if one exists)
    receipt: DeliveryReceipt | None = None


@dataclass(frozen=True, kw_only=True)
class Completed:
    """``done`` (written, or written before), ``rollback_needed`` (a rollback was asked for
    and the state is not restored yet: nothing written), ``lost`` (another worker settled
    the run: nothing written)."""

    result: Literal["done", "rollback_needed", "lost"]
    status: SettledStatus | None = None
    #: the receipt could not be written, so a success was turned into this error
    downgraded: str | None = None


async def lock_thread(conn: AsyncConnection, thread_id: str, postgres: bool) -> Row[Any] | None:
    query = select(threads).where(threads.c.thread_id == thread_id)
    if postgres:
        query = query.with_for_update()
    return (await conn.execute(query)).first()


async def _active_runs(conn: AsyncConnection, thread_id: str) -> list[RunRecord]:
    query = (
        select(runs)
        .where(runs.c.thread_id == thread_id, runs.c.status.in_(ACTIVE))
        .order_by(runs.c.seq)
    )
    return [run_record(r) for r in (await conn.execute(query)).all()]


def _idle_status(interrupts: Any) -> ThreadStatus:
    return "interrupted" if interrupts else "idle"


async def _set_thread(conn: AsyncConnection, thread_id: str, now: datetime, **values: Any) -> None:
    await conn.execute(
        update(threads).where(threads.c.thread_id == thread_id).values(updated_at=now, **values)
    )


async def _settle_pending(
    conn: AsyncConnection, run: RunRecord, action: CancelAction, now: datetime
) -> Settled:
    """End a run that never started: nothing ran, so a rollback has nothing to restore."""
    if action == "rollback":
        await conn.execute(delete(runs).where(runs.c.run_id == run.run_id))
        return Settled(run=run, status="deleted")
    await conn.execute(
        update(runs)
        .where(runs.c.run_id == run.run_id)
        .values(
            status="interrupted",
            stop_reason="cancelled",
            cancel_action=action,
            updated_at=now,
        )
    )
    return Settled(run=run, status="interrupted")


async def _mark(conn: AsyncConnection, run: RunRecord, action: CancelAction, now: datetime) -> None:
    """Ask the owner of a running run to stop it (the first request's action stays)."""
    if run.cancel_action is None:
        await conn.execute(
            update(runs)
            .where(runs.c.run_id == run.run_id)
            .values(cancel_action=action, updated_at=now)
        )


class RunQueue:
    """Admission, claims and endings of runs. ``checkpoint_mode`` is the server's: threads
    it creates are recorded in it, and it neither admits nor claims runs of threads created
    in the other mode (they would misread the checkpoints)."""

    def __init__(self, db: Database, checkpoint_mode: CheckpointMode = "full") -> None:
        self._db = db
        self._mode: CheckpointMode = checkpoint_mode

    # -- admission ---------------------------------------------------------------------

    async def admit(
        self,
        new: NewRun,
        *,
        now: datetime,
        create_thread: Mapping[str, Any] | None = None,
        scope: Scope = SYSTEM,
    ) -> Admitted:
        """Append a pending run to its thread's queue, applying its multitask strategy.

        ``reject`` refuses while the thread has an active run; ``interrupt``/``rollback``
        end every earlier run that has not started and mark every executing one for
        cancellation, in the same transaction, so after any burst exactly the last admitted
        run proceeds. ``create_thread`` (metadata) creates the thread when it is missing, owned
        by ``scope.user_id``; an existing thread outside ``scope`` is not found.
        """
        async with self._db.begin() as conn:
            thread = await self._thread_for(conn, new.thread_id, create_thread, now, scope)
            active = await _active_runs(conn, new.thread_id)
            if active and new.multitask_strategy == "reject":
                raise RunConflict(
                    f"thread {new.thread_id} already has an active run ({active[0].run_id}); "
                    "multitask_strategy 'reject' refuses to start another"
                )
            settled: list[Settled] = []
            marked: list[RunRecord] = []
            strategy = new.multitask_strategy
            if strategy == "interrupt" or strategy == "rollback":
                for run in active:
                    if run.status == "pending":
                        settled.append(await _settle_pending(conn, run, strategy, now))
                    else:
                        await _mark(conn, run, strategy, now)
                        marked.append(run)
            # positions are never reused, although runs are deleted (a rollback deletes them)
            highest = (
                await conn.execute(
                    select(func.coalesce(func.max(runs.c.seq), 0)).where(
                        runs.c.thread_id == new.thread_id
                    )
                )
            ).scalar_one()
            seq = max(int(highest), int(thread._mapping["run_seq"] or 0))
            await conn.execute(
                insert(runs).values(
                    run_id=new.run_id,
                    thread_id=new.thread_id,
                    assistant_id=new.assistant_id,
                    status="pending",
                    metadata=dict(new.metadata),
                    kwargs=dict(new.kwargs),
                    multitask_strategy=new.multitask_strategy,
                    spec=dict(new.spec),
                    user_id=new.user_id,
                    created_at=now,
                    updated_at=now,
                    seq=int(seq) + 1,
                )
            )
            changes: dict[str, Any] = {}
            if thread._mapping["status"] != "busy":
                changes["status"] = "busy"
            current = dict(thread._mapping["metadata"] or {})
            if any(current.get(k) != v for k, v in new.thread_stamp.items()):
                changes["metadata"] = {**current, **new.thread_stamp}
            if changes:
                await _set_thread(conn, new.thread_id, now, run_seq=seq + 1, **changes)
            else:
                await conn.execute(
                    update(threads)
                    .where(threads.c.thread_id == new.thread_id)
                    .values(run_seq=seq + 1)
                )
            row = (await conn.execute(select(runs).where(runs.c.run_id == new.run_id))).one()
        return Admitted(run=run_record(row), settled=settled, marked=marked)

    async def _thread_for(
        self,
        conn: AsyncConnection,
        thread_id: str,
        create: Mapping[str, Any] | None,
        now: datetime,
        scope: Scope,
    ) -> Row[Any]:
        thread = await lock_thread(conn, thread_id, self._db.is_postgres)
        if thread is not None:
            reached = select(threads.c.thread_id).where(
                threads.c.thread_id == thread_id,
                *scope_conditions(scope, postgres=self._db.is_postgres),
            )
            if (await conn.execute(reached)).first() is None:
                raise ThreadNotFound(thread_id)  # another owner's thread is not found
            if thread._mapping["checkpoint_mode"] != self._mode:
                raise CheckpointModeMismatch(
                    thread_id, thread._mapping["checkpoint_mode"], self._mode
                )
            return thread
        if create is None:
            raise ThreadNotFound(thread_id)
        await conn.execute(
            insert(threads).values(
                thread_id=thread_id,
                created_at=now,
                updated_at=now,
                state_updated_at=now,
                metadata=dict(create),
                status="idle",
                config={},
                values=None,
                interrupts={},
                error=None,
                user_id=scope.user_id,
                checkpoint_mode=self._mode,
            )
        )
        created = await lock_thread(conn, thread_id, self._db.is_postgres)
        assert created is not None
        return created

    # -- claims --------------------------------------------------------------------------

    async def runnable(self, limit: int) -> list[RunRecord]:
        """Runs that may start now, in admission order: the first active run of its thread,
        pending and not asked to stop."""
        earlier = aliased(runs)
        blocked = exists().where(
            earlier.c.thread_id == runs.c.thread_id,
            earlier.c.status.in_(ACTIVE),
            or_(earlier.c.status == "running", earlier.c.seq < runs.c.seq),
        )
        same_mode = select(threads.c.thread_id).where(threads.c.checkpoint_mode == self._mode)
        query = (
            select(runs)
            .where(
                runs.c.status == "pending",
                runs.c.cancel_action.is_(None),
                ~blocked,
                runs.c.thread_id.in_(same_mode),
            )
            .order_by(runs.c.created_at, runs.c.seq)
            .limit(limit)
        )
        async with self._db.connect() as conn:
            return [run_record(r) for r in (await conn.execute(query)).all()]

    async def claim(self, run_id: str, thread_id: str, owner: str, now: datetime) -> Claimed | None:
        """``pending`` → ``running`` for ``owner`` if the run is still the first of its
        thread's queue and nobody claimed or cancelled it meanwhile; else None."""
        async with self._db.begin() as conn:
            if await lock_thread(conn, thread_id, self._db.is_postgres) is None:
                return None
            active = await _active_runs(conn, thread_id)
            first = active[0] if active else None
            if (
                first is None
                or first.run_id != run_id
                or first.status != "pending"
                or first.cancel_action is not None
            ):
                return None
            await conn.execute(
                update(runs)
                .where(runs.c.run_id == run_id, runs.c.status == "pending")
                .values(status="running", owner=owner, started_at=now, updated_at=now)
            )
            row = (await conn.execute(select(runs).where(runs.c.run_id == run_id))).one()
        return Claimed(run=run_record(row), spec=dict(row._mapping["spec"] or {}))

    # -- cancellation --------------------------------------------------------------------

    async def cancel(
        self, run_ids: Sequence[str], action: CancelAction, now: datetime
    ) -> Cancelled:
        """Settle the runs that have not started; mark the executing ones for their owners."""
        settled: list[Settled] = []
        marked: list[RunRecord] = []
        async with self._db.begin() as conn:
            query = select(runs.c.thread_id).where(
                runs.c.run_id.in_(list(run_ids)), runs.c.status.in_(ACTIVE)
            )
            thread_ids = sorted({r[0] for r in (await conn.execute(query)).all()})
            for thread_id in thread_ids:
                thread = await lock_thread(conn, thread_id, self._db.is_postgres)
                if thread is None:
                    continue
                active = await _active_runs(conn, thread_id)
                for run in active:
                    if run.run_id not in run_ids:
                        continue
                    if run.status == "pending":
                        settled.append(await _settle_pending(conn, run, action, now))
                    else:
                        await _mark(conn, run, action, now)
                        marked.append(run)
                left = [r for r in active if r.status == "running" or r.run_id not in run_ids]
                if not left:
                    status = (
                        "interrupted"
                        if action == "interrupt"
                        else _idle_status(thread._mapping["interrupts"])
                    )
                    await _set_thread(conn, thread_id, now, status=status, error=None)
        return Cancelled(settled=settled, marked=marked)

    # -- journal and completion ----------------------------------------------------------

    async def write_journal(
        self, run_id: str, owner: str, entries: Sequence[RunEventEntry]
    ) -> bool:
        """Replace the run's journal with ``entries`` while ``owner`` still runs it (False:
        it does not, nothing written). Idempotent."""
        async with self._db.begin() as conn:
            if not await self._owns(conn, run_id, owner):
                return False
            await conn.execute(delete(run_events).where(run_events.c.run_id == run_id))
            await self._append(conn, run_id, entries, start=1)
        return True

    async def complete(self, done: Completion, now: datetime) -> Completed:
        """Thread row and terminal status (or, after a rollback, the run's deletion) in ONE
        transaction, fenced by ownership: a worker that lost the run writes nothing.

        A cancellation recorded meanwhile wins over the run's own ending: ``rollback``
        sends the caller back to restore the state first (``rollback_needed``), and
        ``interrupt`` turns a success into ``interrupted``. The thread stays ``busy`` while
        another run of it is queued.
        """
        try:
            async with self._db.begin() as conn:
                return await self._complete(conn, done, now)
        except sa_exc.StatementError as exc:
            if isinstance(exc, sa_exc.DBAPIError) and not isinstance(exc, sa_exc.DataError):
                raise
            raise UnstorableValue(
                f"the database refused the run's final state: {exc.orig}"
            ) from exc

    async def _complete(self, conn: AsyncConnection, done: Completion, now: datetime) -> Completed:
        thread = await lock_thread(conn, done.thread_id, self._db.is_postgres)
        row = (await conn.execute(select(runs).where(runs.c.run_id == done.run_id))).first()
        if row is None:
            return Completed(result="done", status="deleted") if done.rolled_back else _LOST
        run = run_record(row)
        if run.status not in ACTIVE:
            ours = run.owner == done.owner and run.stop_reason != "orphaned"
            return Completed(result="done", status=run.status) if ours else _LOST
        if run.owner != done.owner or run.status != "running" or thread is None:
            return _LOST
        if run.cancel_action == "rollback" and not done.rolled_back:
            return Completed(result="rollback_needed")
        status, stop_reason = done.status, done.stop_reason
        if run.cancel_action == "interrupt" and status == "success":
            status, stop_reason = "interrupted", "cancelled"
        downgraded = None
        if done.receipt is not None and not done.rolled_back:
            refused = await write_receipt(conn, run.run_id, done.receipt, now)
            if refused is not None and status == "success":
                status, stop_reason = "error", RECEIPT_UNRECORDED
                downgraded = f"the delivery receipt could not be recorded: {refused}"
                done = _downgraded(done, downgraded, now)
        others = [r for r in await _active_runs(conn, done.thread_id) if r.run_id != run.run_id]
        await self._settle_thread(conn, done, thread, status, bool(others), now)
        if done.rolled_back:
            await conn.execute(delete(runs).where(runs.c.run_id == run.run_id))
            return Completed(result="done", status="deleted")
        await conn.execute(
            update(runs)
            .where(runs.c.run_id == run.run_id)
            .values(
                status=status,
                error=done.error,
                stop_reason=stop_reason,
                updated_at=now,
                prompt_tokens=done.usage.prompt_tokens,
                completion_tokens=done.usage.completion_tokens,
                total_tokens=done.usage.total_tokens,
            )
        )
        journal = [_with_status(e, status, stop_reason) for e in done.journal]
        await self._append(conn, run.run_id, journal, start=None)
        return Completed(result="done", status=status, downgraded=downgraded)

    async def _settle_thread(
        self,
        conn: AsyncConnection,
        done: Completion,
        thread: Row[Any],
        status: RunStatus,
        others_queued: bool,
        now: datetime,
    ) -> None:
        values: dict[str, Any] = {}
        interrupts = thread._mapping["interrupts"]
        if done.thread is not None:
            values.update(
                values=done.thread.values,
                interrupts=done.thread.interrupts,
                state_updated_at=now,
            )
            interrupts = done.thread.interrupts
        if others_queued:
            values.update(status="busy", error=None)
        else:
            values.update(
                status=thread_status_after(status, done.rolled_back, interrupts),
                error=done.thread_error if status == "error" and not done.rolled_back else None,
            )
        await _set_thread(conn, done.thread_id, now, **values)

    async def _owns(self, conn: AsyncConnection, run_id: str, owner: str) -> bool:
        query = select(runs.c.run_id).where(
            runs.c.run_id == run_id, runs.c.owner == owner, runs.c.status == "running"
        )
        if self._db.is_postgres:
            query = query.with_for_update()
        return (await conn.execute(query)).first() is not None

    @staticmethod
    async def _append(
        conn: AsyncConnection,
        run_id: str,
        entries: Sequence[RunEventEntry],
        *,
        start: int | None,
    ) -> None:
        if not entries:
            return
        if start is None:
            last = (
                await conn.execute(
                    select(func.coalesce(func.max(run_events.c.seq), 0)).where(
                        run_events.c.run_id == run_id
                    )
                )
            ).scalar_one()
            start = int(last) + 1
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
                for seq, entry in enumerate(entries, start=start)
            ],
        )

    # -- recovery ------------------------------------------------------------------------

    async def orphan(
        self,
        *,
        reason: str,
        now: datetime,
        owners: Sequence[str] | None = None,
        run_ids: Sequence[str] | None = None,
        not_owner: str | None = None,
    ) -> list[RunRecord]:
        """Mark running runs ``error`` (stop reason ``orphaned``): those of ``owners``, or
        ``run_ids``, or every running run not owned by ``not_owner``. Their threads are
        freed unless another run of them is queued."""
        condition: ColumnElement[bool] = runs.c.status == "running"
        if owners is not None:
            condition = and_(condition, runs.c.owner.in_(list(owners)))
        if run_ids is not None:
            condition = and_(condition, runs.c.run_id.in_(list(run_ids)))
        if not_owner is not None:
            condition = and_(condition, or_(runs.c.owner.is_(None), runs.c.owner != not_owner))
        async with self._db.begin() as conn:
            return await orphan_runs(conn, condition, reason, now, postgres=self._db.is_postgres)

    async def delete_finished(self, run_id: str) -> bool:
        async with self._db.begin() as conn:
            result = await conn.execute(
                delete(runs).where(runs.c.run_id == run_id, runs.c.status.not_in(ACTIVE))
            )
        return bool(result.rowcount)

    # -- state updates -------------------------------------------------------------------

    @asynccontextmanager
    async def idle_thread(self, thread_id: str, now: datetime) -> AsyncIterator[IdleThread]:
        """Hold the thread with no active run while the caller changes its state: no run
        can be admitted until the block ends (``RunConflict`` if one is active now)."""
        async with self._db.begin() as conn:
            if await lock_thread(conn, thread_id, self._db.is_postgres) is None:
                raise ThreadNotFound(thread_id)
            active = await _active_runs(conn, thread_id)
            if active:
                raise RunConflict(
                    f"thread {thread_id} has an active run ({active[0].run_id}); "
                    "state updates must wait"
                )
            yield IdleThread(conn, thread_id, now)


class IdleThread:
    """A thread held idle (see :meth:`RunQueue.idle_thread`)."""

    def __init__(self, conn: AsyncConnection, thread_id: str, now: datetime) -> None:
        self._conn = conn
        self._thread_id = thread_id
        self._now = now

    async def save_state(self, snapshot: ThreadStateSnapshot) -> None:
        await _set_thread(
            self._conn,
            self._thread_id,
            self._now,
            values=snapshot.values,
            interrupts=snapshot.interrupts,
            status=snapshot.status,
            error=snapshot.error,
            state_updated_at=self._now,
        )


_LOST = Completed(result="lost")

#: the stop reason of a success whose delivery receipt could not be written
RECEIPT_UNRECORDED = "delivery_unrecorded"


def _downgraded(done: Completion, message: str, now: datetime) -> Completion:
    """``done`` as an error: without its receipt, the run cannot prove its delivery."""
    error = {"error": "DeliveryUnrecorded", "message": message}
    entry = RunEventEntry(kind="error", data=error, created_at=now)
    return replace(
        done,
        error=message,
        thread_error=error,
        journal=[*done.journal[:-1], entry, *done.journal[-1:]],
    )


def thread_status_after(status: RunStatus, rolled_back: bool, interrupts: Any) -> ThreadStatus:
    """The thread status a finished run leaves (when no other run of it is queued):
    ``error`` after a failure; ``interrupted`` after a cancel, a breakpoint or an
    ``interrupt()`` (LangGraph calls all of them interrupted); after a success or a rollback,
    ``interrupted`` while an interrupt waits, else ``idle``."""
    if rolled_back:
        return _idle_status(interrupts)
    if status == "error":
        return "error"
    if status == "interrupted":
        return "interrupted"
    return _idle_status(interrupts)


def _with_status(entry: RunEventEntry, status: RunStatus, stop_reason: str | None) -> RunEventEntry:
    """The closing ``run_finished`` entry says the status the run really ended with."""
    if entry.kind != "run_finished":
        return entry
    data = {**entry.data, "status": status, "stop_reason": stop_reason}
    return RunEventEntry(kind=entry.kind, data=data, created_at=entry.created_at, seq=entry.seq)


async def orphan_runs(
    conn: AsyncConnection,
    condition: ColumnElement[bool],
    reason: str,
    now: datetime,
    *,
    postgres: bool,
) -> list[RunRecord]:
    """Within a transaction: settle the running runs matching ``condition`` as orphans."""
    candidates = select(runs).where(condition)
    if postgres:
        candidates = candidates.with_for_update(skip_locked=True)
    orphans = [run_record(r) for r in (await conn.execute(candidates)).all()]
    if not orphans:
        return []
    await conn.execute(
        update(runs)
        .where(runs.c.run_id.in_([r.run_id for r in orphans]), runs.c.status == "running")
        .values(status="error", error=reason, stop_reason="orphaned", updated_at=now)
    )
    await backfill_receipts(conn, [r.run_id for r in orphans], now)
    thread_ids = sorted({r.thread_id for r in orphans})
    still_active = select(runs.c.thread_id).where(
        runs.c.thread_id.in_(thread_ids), runs.c.status.in_(ACTIVE)
    )
    await conn.execute(
        update(threads)
        .where(threads.c.thread_id.in_(thread_ids), threads.c.thread_id.not_in(still_active))
        .values(status="error", error={"error": "RunOrphaned", "message": reason}, updated_at=now)
    )
    return orphans
