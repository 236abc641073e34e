"""API keys: a public id and the SHA-256 of the secret; the secret itself is never stored."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select, update

from fawn.store.database import Database
from fawn.store.tables import api_keys, users
from fawn.store.types import utcnow
from fawn.store.users import UserRecord, user_record


@dataclass(frozen=True, kw_only=True)
class ApiKeyRecord:
    key_id: str
    user_id: str
    name: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def live(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


def _key(row: Row[Any]) -> ApiKeyRecord:
    m = row._mapping
    return ApiKeyRecord(
        key_id=m["key_id"],
        user_id=m["user_id"],
        name=m["name"],
        created_at=m["created_at"],
        expires_at=m["expires_at"],
        revoked_at=m["revoked_at"],
    )


class ApiKeyRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(
        self,
        *,
        key_id: str,
        user_id: str,
        name: str,
        secret_hash: str,
        expires_at: datetime | None,
    ) -> ApiKeyRecord:
        record = ApiKeyRecord(
            key_id=key_id,
            user_id=user_id,
            name=name,
            created_at=utcnow(),
            expires_at=expires_at,
            revoked_at=None,
        )
        async with self._db.engine.begin() as conn:
            await conn.execute(insert(api_keys).values(**record.__dict__, secret_hash=secret_hash))
        return record

    async def user_of(self, key_id: str, secret_hash: str) -> UserRecord | None:
        """The user behind a live key whose secret hashes to ``secret_hash``."""
        query = (
            select(api_keys.c.secret_hash, *users.c)
            .join(users, users.c.user_id == api_keys.c.user_id)
            .where(
                (api_keys.c.key_id == key_id)
                & api_keys.c.revoked_at.is_(None)
                & (api_keys.c.expires_at.is_(None) | (api_keys.c.expires_at > utcnow()))
            )
        )
        async with self._db.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None or not hmac.compare_digest(row.secret_hash, secret_hash):
            return None
        return user_record(row._mapping)

    async def list(self, user_id: str | None = None) -> list[ApiKeyRecord]:
        query = select(api_keys).order_by(api_keys.c.created_at)
        if user_id is not None:
            query = query.where(api_keys.c.user_id == user_id)
        async with self._db.engine.connect() as conn:
            return [_key(r) for r in (await conn.execute(query)).all()]

    async def revoke(self, key_id: str) -> ApiKeyRecord | None:
        """Revoke a key (already revoked keys keep their first revocation time)."""
        async with self._db.engine.begin() as conn:
            await conn.execute(
                update(api_keys)
                .where((api_keys.c.key_id == key_id) & api_keys.c.revoked_at.is_(None))
                .values(revoked_at=utcnow())
            )
            row = (await conn.execute(select(api_keys).where(api_keys.c.key_id == key_id))).first()
        return _key(row) if row is not None else None
