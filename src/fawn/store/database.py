"""The SQL database: engine construction, SQLite tuning, migrations, and the translation of
driver failures into the store's own errors.

A connection the server dropped (a restart, an idle timeout) is found out before use: the
SQLAlchemy pool pings a PostgreSQL connection when it is checked out and replaces a dead one,
so a request after a restart does not fail on a stale connection. A database that cannot be
reached at all is :class:`~fawn.store.errors.StoreUnavailable` (503, retryable), never a 500.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import psycopg_pool
from sqlalchemy import Connection, event, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from fawn.config.settings import DatabaseSettings
from fawn.store.errors import StoreUnavailable

log = logging.getLogger(__name__)

_MIGRATIONS = Path(__file__).parent / "migrations"
_PG_MIGRATION_LOCK = 0x6661776E  # "fawn": serialises migrations across gateway workers


def json_contains(container: Any, contained: Any) -> bool:
    """PostgreSQL's ``jsonb @> jsonb`` for decoded JSON values (SQLite has no equivalent).

    Objects contain the pairs of a sub-object, arrays contain the elements of a sub-array
    (each scalar must be an element of the container array, each object or array must be
    contained in one of its object or array elements), and scalars equal by JSON type and
    value (``1`` equals ``1.0``, never ``true``). The one exception to structural matching
    holds at the top level only, as in PostgreSQL: an array contains a scalar it holds.
    """
    if isinstance(container, list) and _is_scalar(contained):
        return any(_is_scalar(c) and _scalar_equal(c, contained) for c in container)
    return _contains(container, contained)


def _contains(container: Any, contained: Any) -> bool:
    if isinstance(contained, dict):
        return isinstance(container, dict) and all(
            key in container and _contains(container[key], value)
            for key, value in contained.items()
        )
    if isinstance(contained, list):
        return isinstance(container, list) and all(
            _array_holds(container, item) for item in contained
        )
    return _is_scalar(container) and _scalar_equal(container, contained)


def _array_holds(array: list[Any], item: Any) -> bool:
    if _is_scalar(item):
        return any(_is_scalar(c) and _scalar_equal(c, item) for c in array)
    return any(not _is_scalar(c) and _contains(c, item) for c in array)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def _scalar_equal(a: Any, b: Any) -> bool:
    return _json_kind(a) == _json_kind(b) and bool(a == b)


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


#: the exception roots of the database drivers (and pools) under the store
DRIVER_ERRORS: tuple[type[Exception], ...] = (
    sa_exc.SQLAlchemyError,
    psycopg.Error,
    psycopg_pool.PoolTimeout,
    psycopg_pool.PoolClosed,
    sqlite3.Error,
    ConnectionError,
)

#: PostgreSQL SQLSTATEs that mean "the server is going away or not there yet"
_UNAVAILABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def unavailable_error(exc: BaseException) -> StoreUnavailable | None:
    """``exc`` as :class:`StoreUnavailable` when it says the database cannot be reached now
    (refused or dropped connection, a server shutting down, a busy SQLite file, an
    exhausted pool), else ``None``: constraint violations and bad data are not retryable."""
    if isinstance(exc, StoreUnavailable):
        return exc
    cause: BaseException = exc
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated:
            return StoreUnavailable(f"the database connection was lost: {exc.orig}")
        cause = exc.orig if exc.orig is not None else exc
    if isinstance(exc, sa_exc.TimeoutError):  # the SQLAlchemy pool is exhausted
        return StoreUnavailable(f"no database connection available: {exc}")
    if _is_unavailable(cause):
        return StoreUnavailable(f"the database is unavailable: {_first_line(cause)}")
    return None


def _is_unavailable(exc: BaseException) -> bool:
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg_pool.PoolClosed):
        return True
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        state = getattr(exc, "sqlstate", None)
        return state is None or state.startswith("08") or state in _UNAVAILABLE_SQLSTATES
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc) or "unable to open" in str(exc)
    return isinstance(exc, ConnectionError | TimeoutError)


def _first_line(exc: BaseException) -> str:
    text_ = str(exc).strip().splitlines()
    return text_[0] if text_ else type(exc).__name__


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise a driver's "cannot reach the database" as :class:`StoreUnavailable`."""
    try:
        yield
    except Exception as exc:
        unavailable = unavailable_error(exc)
        if unavailable is None or unavailable is exc:
            raise
        raise unavailable from exc


@dataclass(kw_only=True)
class Database:
    engine: AsyncEngine
    url: str

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A transaction (committed on success); driver outages become StoreUnavailable."""
        with translated():
            async with self.engine.begin() as conn:
                yield conn

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads; driver outages become StoreUnavailable."""
        with translated():
            async with self.engine.connect() as conn:
                yield conn

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
            engine = create_async_engine(
                url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True
            )
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
    # Alembic logs a dozen INFO lines (plugin setup when imported, "Context impl", ...) on every
    # start, even with nothing to do: quiet it before importing it, keep its warnings, and say
    # ourselves what actually changed.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from alembic import command
    from alembic.config import Config as AlembicConfig
    from alembic.runtime.migration import MigrationContext

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.attributes["connection"] = connection
    before = MigrationContext.configure(connection).get_current_revision()
    command.upgrade(cfg, "head")
    after = MigrationContext.configure(connection).get_current_revision()
    if after != before:
        log.info("database schema upgraded from %s to %s", before or "empty", after)


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
