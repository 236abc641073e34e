"""Gateway workers: registration, heartbeats, and the declaration that one is dead.

Liveness is judged by watching a worker's ``beat`` counter change, on the observer's own
clock, never by comparing timestamps written by different machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, and_, delete, exists, insert, select, update

from fawn.store.database import Database
from fawn.store.run_queue import orphan_runs
from fawn.store.runs import RunRecord
from fawn.store.tables import runs, workers

WorkerState = Literal["active", "draining", "stopped", "dead"]


@dataclass(frozen=True, kw_only=True)
class WorkerRecord:
    worker_id: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    beat: int
    state: WorkerState


def _record(row: Row[Any]) -> WorkerRecord:
    m = row._mapping
    return WorkerRecord(
        worker_id=m["worker_id"],
        host=m["host"],
        pid=m["pid"],
        started_at=m["started_at"],
        heartbeat_at=m["heartbeat_at"],
        beat=m["beat"],
        state=m["state"],
    )


class WorkerRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def register(self, worker_id: str, *, host: str, pid: int, now: datetime) -> None:
        async with self._db.begin() as conn:
            await conn.execute(
                insert(workers).values(
                    worker_id=worker_id,
                    host=host,
                    pid=pid,
                    started_at=now,
                    heartbeat_at=now,
                    beat=0,
                    state="active",
                )
            )

    async def heartbeat(self, worker_id: str, now: datetime) -> WorkerRecord | None:
        """Advance our beat. None when a peer has declared us dead (we must stop writing)."""
        async with self._db.begin() as conn:
            result = await conn.execute(
                update(workers)
                .where(
                    workers.c.worker_id == worker_id,
                    workers.c.state.in_(("active", "draining")),
                )
                .values(beat=workers.c.beat + 1, heartbeat_at=now)
            )
            if not result.rowcount:
                return None
            row = (
                await conn.execute(select(workers).where(workers.c.worker_id == worker_id))
            ).one()
        return _record(row)

    async def revive(self, worker_id: str, now: datetime) -> None:
        """After being declared dead (and having stopped every run): take part again."""
        async with self._db.begin() as conn:
            await conn.execute(
                update(workers)
                .where(workers.c.worker_id == worker_id)
                .values(state="active", beat=workers.c.beat + 1, heartbeat_at=now)
            )

    async def set_state(self, worker_id: str, state: WorkerState, now: datetime) -> None:
        async with self._db.begin() as conn:
            await conn.execute(
                update(workers)
                .where(workers.c.worker_id == worker_id, workers.c.state != "dead")
                .values(state=state, heartbeat_at=now)
            )

    async def all(self) -> list[WorkerRecord]:
        async with self._db.connect() as conn:
            return [_record(r) for r in (await conn.execute(select(workers))).all()]

    async def running_owners(self) -> set[str]:
        """Owners of running runs (some may have no worker row: they never registered)."""
        query = select(runs.c.owner).where(runs.c.status == "running").distinct()
        async with self._db.connect() as conn:
            return {r[0] for r in (await conn.execute(query)).all() if r[0] is not None}

    async def declare_dead(
        self, worker_id: str, *, beat: int | None, reason: str, now: datetime
    ) -> list[RunRecord]:
        """Declare ``worker_id`` dead if its beat is still ``beat`` (None: it has no row),
        and settle its running runs as orphans, in one transaction. Fenced: a worker that
        renewed meanwhile is left alone (nothing happens, [] is returned)."""
        async with self._db.begin() as conn:
            if beat is not None:
                result = await conn.execute(
                    update(workers)
                    .where(
                        workers.c.worker_id == worker_id,
                        workers.c.beat == beat,
                        workers.c.state != "dead",
                    )
                    .values(state="dead")
                )
                if not result.rowcount:
                    return []
            else:
                registered = exists().where(workers.c.worker_id == worker_id)
                if (await conn.execute(select(registered))).scalar_one():
                    return []
            condition = and_(runs.c.status == "running", runs.c.owner == worker_id)
            return await orphan_runs(conn, condition, reason, now, postgres=self._db.is_postgres)

    async def forget(self, states: tuple[WorkerState, ...], older_than: datetime) -> int:
        """Drop the rows of stopped or dead workers that own no running run."""
        owns = exists().where(runs.c.owner == workers.c.worker_id, runs.c.status == "running")
        async with self._db.begin() as conn:
            result = await conn.execute(
                delete(workers).where(
                    workers.c.state.in_(states), workers.c.heartbeat_at < older_than, ~owns
                )
            )
        return int(result.rowcount or 0)
