"""Browser sessions: one row per sign-in, so a sign-out ends that session on every worker."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import delete, insert, select

from fawn.store.database import Database
from fawn.store.tables import sessions, users
from fawn.store.types import utcnow
from fawn.store.users import UserRecord, user_record


class SessionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, user_id: str, expires_at: datetime) -> str:
        """A new session id (random, 256 bits). Expired sessions of the user are removed."""
        session_id = secrets.token_urlsafe(32)
        now = utcnow()
        async with self._db.engine.begin() as conn:
            await conn.execute(
                delete(sessions).where(
                    (sessions.c.user_id == user_id) & (sessions.c.expires_at <= now)
                )
            )
            await conn.execute(
                insert(sessions).values(
                    session_id=session_id, user_id=user_id, created_at=now, expires_at=expires_at
                )
            )
        return session_id

    async def user_of(self, session_id: str) -> UserRecord | None:
        """The user of a live session (None when it ended, expired or never existed)."""
        query = (
            select(users)
            .join(sessions, sessions.c.user_id == users.c.user_id)
            .where((sessions.c.session_id == session_id) & (sessions.c.expires_at > utcnow()))
        )
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return user_record(row._mapping) if row is not None else None

    async def delete(self, session_id: str) -> None:
        async with self._db.engine.begin() as conn:
            await conn.execute(delete(sessions).where(sessions.c.session_id == session_id))

    async def prune(self) -> int:
        """Remove expired sessions; the number removed."""
        async with self._db.engine.begin() as conn:
            result = await conn.execute(delete(sessions).where(sessions.c.expires_at <= utcnow()))
        return int(result.rowcount or 0)
