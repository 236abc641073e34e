"""The SQL database: engine construction, SQLite tuning, and migrations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import Connection, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from fawn.config.settings import DatabaseSettings

_MIGRATIONS = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 0x6661776E  # "fawn": serialises migrations across gateway workers


def json_contains(container: Any, contained: Any) -> bool:
    """PostgreSQL ``@>`` semantics for JSON values, for SQLite."""
    if isinstance(contained, dict):
        return isinstance(container, dict) and all(
            k in container and json_contains(container[k], v) for k, v in contained.items()
        )
    if isinstance(contained, list):
        if not isinstance(container, list):
            return False
        return all(any(json_contains(c, item) for c in container) for item in contained)
    if isinstance(container, list):  # a scalar is contained in an array holding it
        return contained in container
    return bool(container == contained) and type(container) is type(contained)


def _sqlite_json_contains(container: str | None, contained: str | None) -> int:
    if container is None or contained is None:
        return 0
    return int(json_contains(json.loads(container), json.loads(contained)))


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite+aiosqlite:///{(data_dir / 'fawn.db').resolve()}"


def normalise_url(url: str) -> str:
    """Pick the async driver for a user-facing URL (``postgresql://`` → psycopg)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend == "sqlite":
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    raise ValueError(f"unsupported database URL scheme: {parsed.drivername}")


def libpq_url(url: str) -> str:
    """The same database as a plain libpq URL (for psycopg / the LangGraph saver)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@dataclass(kw_only=True)
class Database:
    engine: AsyncEngine
    url: str

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @classmethod
    def from_settings(cls, settings: DatabaseSettings, data_dir: Path) -> Database:
        if settings.url is None:
            data_dir.mkdir(parents=True, exist_ok=True)
            url = sqlite_url(data_dir)
        else:
            url = normalise_url(settings.url)
        return cls.from_url(url, pool_size=settings.pool_size)

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10) -> Database:
        if url.startswith("sqlite"):
            engine = create_async_engine(url, connect_args={"timeout": 30})
            _tune_sqlite(engine)
        else:
            engine = create_async_engine(url, pool_size=pool_size, max_overflow=pool_size)
        return cls(engine=engine, url=url)

    async def migrate(self) -> None:
        """Apply every pending migration (idempotent; safe with several workers)."""
        async with self.engine.connect() as conn:
            if self.is_postgres:
                await conn.execute(text(f"SELECT pg_advisory_lock({_PG_MIGRATION_LOCK})"))
                await conn.commit()
            try:
                await conn.run_sync(_upgrade_to_head)
                await conn.commit()
            finally:
                if self.is_postgres:
                    await conn.execute(text(f"SELECT pg_advisory_unlock({_PG_MIGRATION_LOCK})"))
                    await conn.commit()

    async def dispose(self) -> None:
        await self.engine.dispose()


def _upgrade_to_head(connection: Connection) -> None:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.attributes["connection"] = connection
    command.upgrade(cfg, "head")


def _tune_sqlite(engine: AsyncEngine) -> None:
    """WAL, foreign keys, our JSON containment function, and write-locking transactions.

    ``BEGIN IMMEDIATE`` takes the write lock up front, so a read-check-write transaction (run
    admission, for one) cannot interleave with another writer.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()
        dbapi_conn.create_function("json_contains", 2, _sqlite_json_contains, deterministic=True)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
