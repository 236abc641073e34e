"""Delivery receipts: what a run presented and what it produced under ``outputs/``.

A receipt is written in the transaction that makes the run's terminal status durable
(:meth:`fawn.store.run_queue.RunQueue.complete`), once: writing it again keeps the first.
A run settled by recovery (orphaned) gets an empty one, marked ``recovered``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from fawn.store.database import Database, unavailable_error
from fawn.store.tables import run_receipts


@dataclass(frozen=True, kw_only=True)
class DeliveryReceipt:
    presented: list[str] = field(default_factory=list)
    produced: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    satisfied: bool = True
    #: written by recovery for a run nobody finished (it proves nothing was delivered)
    recovered: bool = False
    created_at: datetime | None = None


async def write_receipt(
    conn: AsyncConnection, run_id: str, receipt: DeliveryReceipt, now: datetime
) -> str | None:
    """Insert the receipt unless the run has one, inside a savepoint of the caller's
    transaction; None, or why the database refused it (the transaction goes on)."""
    have = select(run_receipts.c.run_id).where(run_receipts.c.run_id == run_id)
    if (await conn.execute(have)).first() is not None:
        return None
    try:
        async with conn.begin_nested():
            await conn.execute(
                run_receipts.insert().values(
                    run_id=run_id,
                    presented=list(receipt.presented),
                    produced=list(receipt.produced),
                    matched=list(receipt.matched),
                    satisfied=receipt.satisfied,
                    recovered=receipt.recovered,
                    created_at=now,
                )
            )
    except sa_exc.DBAPIError as exc:
        if unavailable_error(exc) is not None:
            raise
        return str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return None


async def backfill_receipts(conn: AsyncConnection, run_ids: Sequence[str], now: datetime) -> None:
    """An empty, ``recovered`` receipt for each run that has none."""
    if not run_ids:
        return
    have = select(run_receipts.c.run_id).where(run_receipts.c.run_id.in_(list(run_ids)))
    existing = {r[0] for r in (await conn.execute(have)).all()}
    missing = [rid for rid in run_ids if rid not in existing]
    if missing:
        await conn.execute(
            run_receipts.insert(),
            [
                {
                    "run_id": rid,
                    "presented": [],
                    "produced": [],
                    "matched": [],
                    "satisfied": False,
                    "recovered": True,
                    "created_at": now,
                }
                for rid in missing
            ],
        )


class ReceiptRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, run_id: str) -> DeliveryReceipt | None:
        query = select(run_receipts).where(run_receipts.c.run_id == run_id)
        async with self._db.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        m = row._mapping
        return DeliveryReceipt(
            presented=list(m["presented"]),
            produced=list(m["produced"]),
            matched=list(m["matched"]),
            satisfied=bool(m["satisfied"]),
            recovered=bool(m["recovered"]),
            created_at=m["created_at"],
        )
