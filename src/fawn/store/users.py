"""User accounts: email, password hash, role, token version, linked identity provider."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Row, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from fawn.store.database import Database
from fawn.store.errors import AlreadyInitialized, EmailTaken, UserNotFound
from fawn.store.tables import sessions, users
from fawn.store.types import utcnow

Role = Literal["admin", "user"]
ROLES: tuple[Role, ...] = ("admin", "user")

# Serialises "is there an admin yet? then create one" across PostgreSQL connections (SQLite's
# BEGIN IMMEDIATE already takes the write lock up front).
_PG_FIRST_ADMIN_LOCK = 0x6661776F


@dataclass(frozen=True, kw_only=True)
class UserRecord:
    user_id: str
    email: str
    password_hash: str | None
    role: Role
    token_version: int
    needs_setup: bool
    disabled: bool
    display_name: str | None
    oauth_provider: str | None
    oauth_subject: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True)
class NewUser:
    email: str
    password_hash: str | None = None
    role: Role = "user"
    needs_setup: bool = False
    display_name: str | None = None
    oauth_provider: str | None = None
    oauth_subject: str | None = None


def normalize_email(email: str) -> str:
    return email.strip().lower()


def user_record(mapping: Mapping[Any, Any]) -> UserRecord:
    return UserRecord(
        user_id=mapping["user_id"],
        email=mapping["email"],
        password_hash=mapping["password_hash"],
        role=mapping["role"],
        token_version=mapping["token_version"],
        needs_setup=bool(mapping["needs_setup"]),
        disabled=bool(mapping["disabled"]),
        display_name=mapping["display_name"],
        oauth_provider=mapping["oauth_provider"],
        oauth_subject=mapping["oauth_subject"],
        created_at=mapping["created_at"],
        updated_at=mapping["updated_at"],
    )


def _one(row: Row[Any] | None) -> UserRecord | None:
    return user_record(row._mapping) if row is not None else None


class UserRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, new: NewUser) -> UserRecord:
        """Raises :class:`EmailTaken` when the email (or the linked identity) is in use."""
        async with self._db.engine.begin() as conn:
            return await self._insert(conn, new)

    async def create_first_admin(self, new: NewUser) -> UserRecord:
        """Create the first admin; :class:`AlreadyInitialized` once any admin exists, even
        when several requests (or workers) race to do it."""
        async with self._db.engine.begin() as conn:
            if self._db.is_postgres:
                await conn.execute(text(f"SELECT pg_advisory_xact_lock({_PG_FIRST_ADMIN_LOCK})"))
            admins = await conn.execute(
                select(func.count()).select_from(users).where(users.c.role == "admin")
            )
            if admins.scalar_one():
                raise AlreadyInitialized()
            return await self._insert(conn, NewUser(**{**new.__dict__, "role": "admin"}))

    async def _insert(self, conn: AsyncConnection, new: NewUser) -> UserRecord:
        now = utcnow()
        record = UserRecord(
            user_id=str(uuid.uuid4()),
            email=normalize_email(new.email),
            password_hash=new.password_hash,
            role=new.role,
            token_version=0,
            needs_setup=new.needs_setup,
            disabled=False,
            display_name=new.display_name,
            oauth_provider=new.oauth_provider,
            oauth_subject=new.oauth_subject,
            created_at=now,
            updated_at=now,
        )
        try:
            async with conn.begin_nested():
                await conn.execute(insert(users).values(**record.__dict__))
        except IntegrityError:
            raise EmailTaken(record.email) from None
        return record

    async def get(self, user_id: str) -> UserRecord | None:
        return await self._fetch(users.c.user_id == user_id)

    async def by_email(self, email: str) -> UserRecord | None:
        return await self._fetch(users.c.email == normalize_email(email))

    async def by_oauth(self, provider: str, subject: str) -> UserRecord | None:
        return await self._fetch(
            (users.c.oauth_provider == provider) & (users.c.oauth_subject == subject)
        )

    async def _fetch(self, condition: Any) -> UserRecord | None:
        async with self._db.engine.connect() as conn:
            return _one((await conn.execute(select(users).where(condition))).first())

    async def require(self, email: str) -> UserRecord:
        record = await self.by_email(email)
        if record is None:
            raise UserNotFound(email)
        return record

    async def list(self) -> list[UserRecord]:
        async with self._db.engine.connect() as conn:
            rows = (await conn.execute(select(users).order_by(users.c.created_at))).all()
        return [user_record(r._mapping) for r in rows]

    async def count_admins(self) -> int:
        async with self._db.engine.connect() as conn:
            query = select(func.count()).select_from(users).where(users.c.role == "admin")
            return int((await conn.execute(query)).scalar_one())

    async def set_password(
        self,
        user_id: str,
        password_hash: str,
        *,
        email: str | None = None,
        needs_setup: bool | None = None,
    ) -> UserRecord:
        """New password (and optionally email): the token version moves on and every session
        of the user ends, so tokens issued before stop working."""
        values: dict[str, Any] = {"password_hash": password_hash}
        if email is not None:
            values["email"] = normalize_email(email)
        if needs_setup is not None:
            values["needs_setup"] = needs_setup
        return await self._revoking_update(user_id, values)

    async def set_disabled(self, user_id: str, disabled: bool) -> UserRecord:
        return await self._revoking_update(user_id, {"disabled": disabled})

    async def revoke_tokens(self, user_id: str) -> UserRecord:
        return await self._revoking_update(user_id, {})

    async def _revoking_update(self, user_id: str, values: dict[str, Any]) -> UserRecord:
        async with self._db.engine.begin() as conn:
            try:
                async with conn.begin_nested():
                    result = await conn.execute(
                        update(users)
                        .where(users.c.user_id == user_id)
                        .values(
                            **values,
                            token_version=users.c.token_version + 1,
                            updated_at=utcnow(),
                        )
                        .returning(*users.c)
                    )
            except IntegrityError:
                raise EmailTaken(str(values.get("email"))) from None
            row = result.first()
            if row is None:
                raise UserNotFound(user_id)
            await conn.execute(delete(sessions).where(sessions.c.user_id == user_id))
        return user_record(row._mapping)

    async def set_role(self, user_id: str, role: Role) -> UserRecord:
        return await self._update(user_id, {"role": role})

    async def link_identity(self, user_id: str, provider: str, subject: str) -> UserRecord:
        return await self._update(user_id, {"oauth_provider": provider, "oauth_subject": subject})

    async def _update(self, user_id: str, values: dict[str, Any]) -> UserRecord:
        async with self._db.engine.begin() as conn:
            row = (
                await conn.execute(
                    update(users)
                    .where(users.c.user_id == user_id)
                    .values(**values, updated_at=utcnow())
                    .returning(*users.c)
                )
            ).first()
        if row is None:
            raise UserNotFound(user_id)
        return user_record(row._mapping)
