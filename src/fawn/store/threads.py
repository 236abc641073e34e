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

from fawn.store.database import Database
from fawn.store.errors import ThreadExists
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

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in the order of the SDK's ``Thread`` (values not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


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
    )


class ThreadRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        if_exists: Literal["raise", "do_nothing"] = "raise",
    ) -> ThreadRecord:
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
        )
        try:
            async with self._db.engine.begin() as conn:
                await conn.execute(insert(threads).values(**record.as_dict()))
        except IntegrityError:
            if if_exists == "do_nothing":
                existing = await self.get(thread_id)
                if existing is not None:
                    return existing
            raise ThreadExists(thread_id) from None
        return record

    async def get(self, thread_id: str) -> ThreadRecord | None:
        async with self._db.engine.connect() as conn:
            row = (
                await conn.execute(select(threads).where(threads.c.thread_id == thread_id))
            ).first()
        return _record(row) if row is not None else None

    async def update_metadata(
        self, thread_id: str, patch: Mapping[str, Any]
    ) -> ThreadRecord | None:
        """Shallow-merge ``patch`` into the metadata (the row is locked: concurrent patches
        both land)."""
        query = select(threads).where(threads.c.thread_id == thread_id).with_for_update()
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

    async def delete(self, thread_id: str) -> bool:
        async with self._db.engine.begin() as conn:
            result = await conn.execute(delete(threads).where(threads.c.thread_id == thread_id))
        return bool(result.rowcount)

    async def search(
        self,
        flt: ThreadFilter,
        *,
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
        condition = self._condition(flt)
        if condition is not None:
            query = query.where(condition)
            counter = counter.where(condition)
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(query)).all()
            total = (await conn.execute(counter)).scalar_one()
        return [_record(r) for r in rows], int(total)

    async def count(self, flt: ThreadFilter) -> int:
        counter: Select[Any] = select(func.count()).select_from(threads)
        condition = self._condition(flt)
        if condition is not None:
            counter = counter.where(condition)
        async with self._db.engine.connect() as conn:
            return int((await conn.execute(counter)).scalar_one())

    def _condition(self, flt: ThreadFilter) -> ColumnElement[bool] | None:
        parts: list[ColumnElement[bool]] = []
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
        encoded = orjson.dumps(dict(value)).decode()
        if self._db.is_postgres:
            return column.op("@>")(literal(encoded).cast(JSONB))  # type: ignore[no-any-return]
        return func.json_contains(column, literal(encoded)) == 1
