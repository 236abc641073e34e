"""Thread records: the durable row behind every conversation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, Literal

import orjson
from sqlalchemy import ColumnElement, Row, and_, delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import Select, literal

from fawn.config.settings import CheckpointMode
from fawn.store.database import Database
from fawn.store.errors import CheckpointModeMismatch, ThreadExists
from fawn.store.scope import DEFAULT_USER, Scope
from fawn.store.tables import threads
from fawn.store.types import utcnow

ThreadStatus = Literal["idle", "busy", "interrupted", "error"]
ThreadSortBy = Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"]


@dataclass(frozen=True, kw_only=True)
class ThreadRecord:
    thread_id: str
    created_at: datetime
    updated_at: datetime
    state_updated_at: datetime
    metadata: dict[str, Any]
    status: ThreadStatus
    config: dict[str, Any]
    values: dict[str, Any] | None
    interrupts: dict[str, Any]
    error: Any = None
    #: the owner; server-owned, not part of the SDK's ``Thread``
    user_id: str = DEFAULT_USER
    #: the checkpoint mode the thread was created in; server-owned, not part of ``Thread``
    checkpoint_mode: CheckpointMode = "full"

    def as_dict(self) -> dict[str, Any]:
        """The SDK's ``Thread`` fields by name, in its order (values not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _SERVER}

    def require_mode(self, mode: CheckpointMode) -> None:
        """Refuse a thread whose checkpoints were written in another mode than ``mode``."""
        if self.checkpoint_mode != mode:
            raise CheckpointModeMismatch(self.thread_id, self.checkpoint_mode, mode)


#: fields of the record that are the server's, not the SDK ``Thread``'s
_SERVER = frozenset({"user_id", "checkpoint_mode"})


@dataclass(frozen=True, kw_only=True)
class ThreadFilter:
    """Conditions that all must hold: ``metadata``/``values`` by JSON containment (``@>``)."""

    metadata: Mapping[str, Any] | None = None
    values: Mapping[str, Any] | None = None
    status: ThreadStatus | None = None
    ids: Sequence[str] | None = None


@dataclass(frozen=True, kw_only=True)
class ThreadStateSnapshot:
    """What a run or a state update leaves behind on the thread row."""

    values: dict[str, Any] | None
    interrupts: dict[str, Any] = field(default_factory=dict)
    status: ThreadStatus = "idle"
    error: Any = None


def _record(row: Row[Any]) -> ThreadRecord:
    m = row._mapping
    return ThreadRecord(
        thread_id=m["thread_id"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        state_updated_at=m["state_updated_at"],
        metadata=m["metadata"] or {},
        status=m["status"],
        config=m["config"] or {},
        values=m["values"],
        interrupts=m["interrupts"] or {},
        error=m["error"],
        user_id=m["user_id"],
        checkpoint_mode=m["checkpoint_mode"],
    )


class ThreadRepository:
    """Thread rows; a thread created here is recorded in ``checkpoint_mode`` (the server's)."""

    def __init__(self, db: Database, checkpoint_mode: CheckpointMode = "full") -> None:
        self._db = db
        self.checkpoint_mode: CheckpointMode = checkpoint_mode

    async def create(
        self,
        thread_id: str,
        *,
        scope: Scope,
        metadata: Mapping[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> ThreadRecord:
        """A new thread owned by ``scope.user_id``. ``do_nothing`` returns an existing thread
        only when the scope reaches it (another owner's thread is a conflict)."""
        now = utcnow()
        record = ThreadRecord(
            thread_id=thread_id,
            created_at=now,
            updated_at=now,
            state_updated_at=now,
            metadata=dict(metadata or {}),
            status="idle",
            config={},
            values=None,
            interrupts={},
            user_id=scope.user_id,
            checkpoint_mode=self.checkpoint_mode,
        )
        try:
            async with self._db.engine.begin() as conn:
                await conn.execute(
                    insert(threads).values(
                        **record.as_dict(),
                        user_id=record.user_id,
                        checkpoint_mode=record.checkpoint_mode,
                    )
                )
        except IntegrityError:
            if if_exists == "do_nothing":
                existing = await self.get(thread_id, scope=scope)
                if existing is not None:
                    return existing
            raise ThreadExists(thread_id) from None
        return record

    async def get(self, thread_id: str, *, scope: Scope) -> ThreadRecord | None:
        """The thread, if ``scope`` reaches it (else None, exactly as for a missing one)."""
        query = select(threads).where(self._in_scope(thread_id, scope))
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return _record(row) if row is not None else None

    async def owner_of(self, thread_id: str) -> str | None:
        """The owner of a thread, for the server's own use (where its files live)."""
        query = select(threads.c.user_id).where(threads.c.thread_id == thread_id)
        async with self._db.engine.connect() as conn:
            owner: str | None = (await conn.execute(query)).scalar_one_or_none()
        return owner

    async def update_metadata(
        self, thread_id: str, patch: Mapping[str, Any], *, scope: Scope
    ) -> ThreadRecord | None:
        """Shallow-merge ``patch`` into the metadata (the row is locked: concurrent patches
        both land)."""
        query = select(threads).where(self._in_scope(thread_id, scope)).with_for_update()
        async with self._db.engine.begin() as conn:
            row = (await conn.execute(query)).first()
            if row is None:
                return None
            current = _record(row)
            updated = replace(current, metadata={**current.metadata, **patch}, updated_at=utcnow())
            await conn.execute(
                update(threads)
                .where(threads.c.thread_id == thread_id)
                .values(metadata=updated.metadata, updated_at=updated.updated_at)
            )
        return updated

    async def save_state(self, thread_id: str, snapshot: ThreadStateSnapshot) -> None:
        """Record the thread's latest values, interrupts and status."""
        now = utcnow()
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(threads)
                .where(threads.c.thread_id == thread_id)
                .values(
                    values=snapshot.values,
                    interrupts=snapshot.interrupts,
                    status=snapshot.status,
                    error=snapshot.error,
                    updated_at=now,
                    state_updated_at=now,
                )
            )

    async def set_status(self, thread_id: str, status: ThreadStatus, error: Any = None) -> None:
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(threads)
                .where(threads.c.thread_id == thread_id)
                .values(status=status, error=error, updated_at=utcnow())
            )

    async def set_config(self, thread_id: str, config: Mapping[str, Any]) -> None:
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(threads).where(threads.c.thread_id == thread_id).values(config=dict(config))
            )

    async def delete(self, thread_id: str, *, scope: Scope) -> bool:
        async with self._db.engine.begin() as conn:
            result = await conn.execute(delete(threads).where(self._in_scope(thread_id, scope)))
        return bool(result.rowcount)

    async def reassign(self, from_user: str, to_user: str) -> list[str]:
        """Give every thread of ``from_user`` to ``to_user`` (its metadata's ``user_id`` names
        the new owner, as for threads created with accounts); the ids of those threads."""
        query = select(threads.c.thread_id, threads.c.metadata).where(
            threads.c.user_id == from_user
        )
        async with self._db.engine.begin() as conn:
            rows = (await conn.execute(query.with_for_update())).all()
            for row in rows:
                await conn.execute(
                    update(threads)
                    .where(threads.c.thread_id == row.thread_id)
                    .values(user_id=to_user, metadata={**(row.metadata or {}), "user_id": to_user})
                )
        return [row.thread_id for row in rows]

    async def search(
        self,
        flt: ThreadFilter,
        *,
        scope: Scope,
        limit: int = 10,
        offset: int = 0,
        sort_by: ThreadSortBy = "created_at",
        sort_order: Literal["asc", "desc"] = "desc",
    ) -> tuple[list[ThreadRecord], int]:
        """A page of matching threads and the total number of matches."""
        column = threads.c[sort_by]
        order = column.asc() if sort_order == "asc" else column.desc()
        tiebreak = threads.c.thread_id.asc() if sort_order == "asc" else threads.c.thread_id.desc()
        query: Select[Any] = select(threads).order_by(order, tiebreak).limit(limit).offset(offset)
        counter: Select[Any] = select(func.count()).select_from(threads)
        condition = self._condition(flt, scope)
        if condition is not None:
            query = query.where(condition)
            counter = counter.where(condition)
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
            total = (await conn.execute(counter)).scalar_one()
        return [_record(r) for r in rows], int(total)

    async def count(self, flt: ThreadFilter, *, scope: Scope) -> int:
        counter: Select[Any] = select(func.count()).select_from(threads)
        condition = self._condition(flt, scope)
        if condition is not None:
            counter = counter.where(condition)
        async with self._db.engine.connect() as conn:
            return int((await conn.execute(counter)).scalar_one())

    def _in_scope(self, thread_id: str, scope: Scope) -> ColumnElement[bool]:
        return and_(threads.c.thread_id == thread_id, *self._scope_parts(scope))

    def _scope_parts(self, scope: Scope) -> list[ColumnElement[bool]]:
        return scope_conditions(scope, postgres=self._db.is_postgres)

    def _condition(self, flt: ThreadFilter, scope: Scope) -> ColumnElement[bool] | None:
        parts: list[ColumnElement[bool]] = self._scope_parts(scope)
        if flt.metadata:
            parts.append(self._contains(threads.c.metadata, flt.metadata))
        if flt.values:
            parts.append(self._contains(threads.c["values"], flt.values))
        if flt.status:
            parts.append(threads.c.status == flt.status)
        if flt.ids is not None:  # an empty list matches nothing
            parts.append(threads.c.thread_id.in_(list(flt.ids)))
        return and_(*parts) if parts else None

    def _contains(self, column: Any, value: Mapping[str, Any]) -> ColumnElement[bool]:
        return json_containment(column, value, postgres=self._db.is_postgres)


def json_containment(
    column: Any, value: Mapping[str, Any], *, postgres: bool
) -> ColumnElement[bool]:
    """``column @> value`` (SQLite: our ``json_contains`` function, the same rules)."""
    encoded = orjson.dumps(dict(value)).decode()
    if postgres:
        return column.op("@>")(literal(encoded).cast(JSONB))  # type: ignore[no-any-return]
    return func.json_contains(column, literal(encoded)) == 1


def scope_conditions(scope: Scope, *, postgres: bool) -> list[ColumnElement[bool]]:
    """The owner condition and the metadata a thread row must contain: part of every query a
    caller's request makes on threads (or joins them), never applied to results afterwards."""
    parts = [json_containment(threads.c.metadata, doc, postgres=postgres) for doc in scope.metadata]
    if not scope.every_owner:
        parts.append(threads.c.user_id == scope.user_id)
    return parts
