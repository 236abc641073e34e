"""One conformance suite for :class:`ThreadRepository`, run against SQLite and PostgreSQL.

Each backend gets one database per module (PostgreSQL: a fresh database, dropped after); the
``threads`` table is emptied before every test, so counts and orders are exact. The property
tests pin our SQLite ``json_contains`` to PostgreSQL's ``@>`` by asking a real server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete

from fawn.config.settings import DatabaseSettings
from fawn.store.database import Database, _sqlite_json_contains, json_contains
from fawn.store.errors import ThreadExists
from fawn.store.scope import SYSTEM, Scope
from fawn.store.tables import threads
from fawn.store.threads import ThreadFilter, ThreadRecord, ThreadRepository, ThreadStateSnapshot
from tests.support.pg import create_database, drop_database


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    name, url = create_database()
    try:
        yield url
    finally:
        drop_database(name)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
async def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        settings = DatabaseSettings()
    else:
        settings = DatabaseSettings(url=request.getfixturevalue("pg_database"))
    db = Database.from_settings(settings, tmp_path_factory.mktemp("store"))
    await db.migrate()
    await db.migrate()  # idempotent
    try:
        yield db
    finally:
        await db.dispose()


@pytest.fixture
async def repo(database: Database) -> ThreadRepository:
    async with database.engine.begin() as conn:
        await conn.execute(delete(threads))
    return ThreadRepository(database)


def _recent(moment: datetime) -> bool:
    return moment.tzinfo is not None and abs(datetime.now(UTC) - moment) < timedelta(minutes=1)


# -- create / get ---------------------------------------------------------------------------


async def test_create_then_get_round_trips(repo: ThreadRepository) -> None:
    metadata = {"user": "ü", "n": 1, "f": 1.5, "flag": True, "none": None, "l": [1, "a", {}]}
    created = await repo.create("t-1", metadata=metadata, scope=SYSTEM)
    assert created == ThreadRecord(
        thread_id="t-1",
        created_at=created.created_at,
        updated_at=created.created_at,
        state_updated_at=created.created_at,
        metadata=metadata,
        status="idle",
        config={},
        values=None,
        interrupts={},
        error=None,
    )
    assert _recent(created.created_at)
    assert await repo.get("t-1", scope=SYSTEM) == created
    assert await repo.get("nope", scope=SYSTEM) is None


async def test_create_existing_raises_or_returns_it(repo: ThreadRepository) -> None:
    first = await repo.create("t-1", metadata={"v": 1}, scope=SYSTEM)
    with pytest.raises(ThreadExists) as raised:
        await repo.create("t-1", metadata={"v": 2}, scope=SYSTEM)
    assert (raised.value.thread_id, raised.value.code) == ("t-1", "thread_exists")
    assert (
        await repo.create("t-1", metadata={"v": 3}, if_exists="do_nothing", scope=SYSTEM) == first
    )
    assert await repo.get("t-1", scope=SYSTEM) == first


# -- updates ----------------------------------------------------------------------------------


async def test_update_metadata_merges_shallowly(repo: ThreadRepository) -> None:
    created = await repo.create("t-1", metadata={"a": 1, "b": {"x": 1}}, scope=SYSTEM)
    updated = await repo.update_metadata("t-1", {"b": {"y": 2}, "c": [3]}, scope=SYSTEM)
    assert updated is not None
    assert updated == replace(
        created, metadata={"a": 1, "b": {"y": 2}, "c": [3]}, updated_at=updated.updated_at
    )
    assert updated.updated_at > created.updated_at
    assert await repo.get("t-1", scope=SYSTEM) == updated
    assert await repo.update_metadata("nope", {"a": 1}, scope=SYSTEM) is None


async def test_concurrent_metadata_patches_all_land(repo: ThreadRepository) -> None:
    await repo.create("t-1", scope=SYSTEM)
    await asyncio.gather(
        *(repo.update_metadata("t-1", {f"k{i}": i}, scope=SYSTEM) for i in range(8))
    )
    record = await repo.get("t-1", scope=SYSTEM)
    assert record is not None
    assert record.metadata == {f"k{i}": i for i in range(8)}


async def test_save_state_set_status_and_config(repo: ThreadRepository) -> None:
    created = await repo.create("t-1", metadata={"m": 1}, scope=SYSTEM)
    values = {"messages": [{"type": "human", "content": "hi"}], "artifacts": ["/o/a.md"]}
    interrupts = {"task-1": [{"value": {"question": "?"}, "id": "i1"}]}
    await repo.save_state(
        "t-1", ThreadStateSnapshot(values=values, interrupts=interrupts, status="interrupted")
    )
    saved = await repo.get("t-1", scope=SYSTEM)
    assert saved is not None
    assert saved == replace(
        created,
        values=values,
        interrupts=interrupts,
        status="interrupted",
        updated_at=saved.updated_at,
        state_updated_at=saved.state_updated_at,
    )
    assert saved.state_updated_at == saved.updated_at > created.updated_at

    error = {"error": "RuntimeError", "message": "boom"}
    await repo.set_status("t-1", "error", error)
    failed = await repo.get("t-1", scope=SYSTEM)
    assert failed is not None
    assert failed == replace(saved, status="error", error=error, updated_at=failed.updated_at)
    assert failed.state_updated_at == saved.state_updated_at

    await repo.set_config("t-1", {"configurable": {"model_name": "m"}})
    configured = await repo.get("t-1", scope=SYSTEM)
    assert configured == replace(failed, config={"configurable": {"model_name": "m"}})

    await repo.set_status("t-1", "busy")
    busy = await repo.get("t-1", scope=SYSTEM)
    assert busy is not None
    assert (busy.status, busy.error) == ("busy", None)


async def test_delete(repo: ThreadRepository) -> None:
    await repo.create("t-1", scope=SYSTEM)
    await repo.create("t-2", scope=SYSTEM)
    assert await repo.delete("t-1", scope=SYSTEM) is True
    assert await repo.delete("t-1", scope=SYSTEM) is False
    assert await repo.get("t-1", scope=SYSTEM) is None
    assert await repo.get("t-2", scope=SYSTEM) is not None


# -- search / count -------------------------------------------------------------------------


async def _corpus(repo: ThreadRepository) -> list[ThreadRecord]:
    """Five threads created in id order, with distinct statuses, metadata and values."""
    specs: list[tuple[dict[str, Any], dict[str, Any] | None, str]] = [
        ({"user": "u1", "tags": ["a"], "n": 0}, None, "idle"),
        ({"user": "u1", "tags": ["a", "b"], "n": 1, "deep": {"l": [1, {"x": 1}]}}, None, "busy"),
        ({"user": "u2", "tags": ["b"], "n": 2}, {"title": "T", "artifacts": ["/o/a"]}, "idle"),
        ({"user": "u2", "n": 3.5, "flag": True}, {"artifacts": ["/o/a", "/o/b"]}, "error"),
        ({"user": "u3", "n": 4, "flag": False}, {"todos": []}, "interrupted"),
    ]
    for i, (metadata, values, status) in enumerate(specs):
        await repo.create(f"t-{i}", metadata=metadata, scope=SYSTEM)
        await repo.save_state(f"t-{i}", ThreadStateSnapshot(values=values, status=status))  # type: ignore[arg-type]
    records = [await repo.get(f"t-{i}", scope=SYSTEM) for i in range(len(specs))]
    assert all(r is not None for r in records)
    return [r for r in records if r is not None]


def _ids(records: list[ThreadRecord]) -> list[str]:
    return [r.thread_id for r in records]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (ThreadFilter(), [4, 3, 2, 1, 0]),
        (ThreadFilter(metadata={}), [4, 3, 2, 1, 0]),
        (ThreadFilter(metadata={"user": "u1"}), [1, 0]),
        (ThreadFilter(metadata={"tags": ["b"]}), [2, 1]),
        (ThreadFilter(metadata={"tags": ["b", "a"]}), [1]),
        (ThreadFilter(metadata={"tags": []}), [2, 1, 0]),
        (ThreadFilter(metadata={"tags": "a"}), []),  # a scalar is held only at the top level
        (ThreadFilter(metadata={"deep": {"l": [{"x": 1}]}}), [1]),
        (ThreadFilter(metadata={"deep": {"l": [1]}}), [1]),
        (ThreadFilter(metadata={"deep": {"l": [[1]]}}), []),
        (ThreadFilter(metadata={"n": 2.0}), [2]),  # JSON numbers compare by value
        (ThreadFilter(metadata={"n": 3.5}), [3]),
        (ThreadFilter(metadata={"flag": True}), [3]),
        (ThreadFilter(metadata={"flag": 1}), []),  # true is not 1
        (ThreadFilter(metadata={"flag": False}), [4]),
        (ThreadFilter(metadata={"user": "u1", "n": 1}), [1]),
        (ThreadFilter(metadata={"missing": None}), []),
        (ThreadFilter(values={"artifacts": ["/o/a"]}), [3, 2]),
        (ThreadFilter(values={"title": "T"}), [2]),
        (ThreadFilter(values={"todos": []}), [4]),
        (ThreadFilter(status="idle"), [2, 0]),
        (ThreadFilter(status="busy"), [1]),
        (ThreadFilter(status="interrupted"), [4]),
        (ThreadFilter(status="error"), [3]),
        (ThreadFilter(ids=["t-0", "t-3", "t-9"]), [3, 0]),
        (ThreadFilter(ids=[]), []),
        (ThreadFilter(metadata={"user": "u2"}, values={"artifacts": ["/o/b"]}), [3]),
        (ThreadFilter(metadata={"user": "u1"}, status="idle", ids=["t-0", "t-1"]), [0]),
    ],
)
async def test_search_and_count_filters(
    repo: ThreadRepository, flt: ThreadFilter, expected: list[int]
) -> None:
    records = await _corpus(repo)
    found, total = await repo.search(flt, limit=100, scope=SYSTEM)
    assert found == [records[i] for i in expected]
    assert total == len(expected)
    assert await repo.count(flt, scope=SYSTEM) == len(expected)


@pytest.mark.parametrize(
    ("sort_by", "ascending"),
    [
        ("thread_id", [0, 1, 2, 3, 4]),
        ("created_at", [0, 1, 2, 3, 4]),
        ("updated_at", [0, 1, 2, 3, 4]),
        ("state_updated_at", [0, 1, 2, 3, 4]),
        ("status", [1, 3, 0, 2, 4]),  # busy, error, idle (by id), interrupted
    ],
)
async def test_search_sorts(repo: ThreadRepository, sort_by: Any, ascending: list[int]) -> None:
    records = await _corpus(repo)
    asc, _ = await repo.search(
        ThreadFilter(), sort_by=sort_by, sort_order="asc", limit=10, scope=SYSTEM
    )
    desc, _ = await repo.search(
        ThreadFilter(), sort_by=sort_by, sort_order="desc", limit=10, scope=SYSTEM
    )
    assert asc == [records[i] for i in ascending]
    assert desc == asc[::-1]


async def test_search_pages(repo: ThreadRepository) -> None:
    records = await _corpus(repo)
    pages = [
        await repo.search(ThreadFilter(), limit=2, offset=offset, sort_order="asc", scope=SYSTEM)
        for offset in (0, 2, 4, 6)
    ]
    assert pages == [
        (records[0:2], 5),
        (records[2:4], 5),
        (records[4:5], 5),
        ([], 5),
    ]
    default, total = await repo.search(ThreadFilter(), scope=SYSTEM)
    assert (_ids(default), total) == (["t-4", "t-3", "t-2", "t-1", "t-0"], 5)


# -- json_contains is PostgreSQL's @> -------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "ü"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, 1.0, 2.5, -1.0])
    | st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4)
    | st.sampled_from(["a", "b", "1", "true", ""])
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=10,
)


def _part_of(draw: st.DrawFn, value: Any) -> Any:
    """A random sub-structure of ``value``: what containment is about."""
    if isinstance(value, dict) and value:
        keys = draw(st.lists(st.sampled_from(sorted(value)), unique=True))
        return {k: _part_of(draw, value[k]) for k in keys}
    if isinstance(value, list) and value:
        return [_part_of(draw, item) for item in draw(st.lists(st.sampled_from(value)))]
    if isinstance(value, int) and not isinstance(value, bool) and draw(st.booleans()):
        return float(value) if abs(value) < 2**53 else value
    return value


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    container = draw(_JSON)
    contained = draw(st.sampled_from(["part", "random", "wrapped"]))
    if contained == "part":
        return container, _part_of(draw, container)
    if contained == "wrapped":  # a scalar part of an array, at the top level or below
        return container, draw(st.sampled_from([[container], {"a": container}, container]))
    return container, draw(_JSON)


@pytest.fixture(scope="module")
def pg_conn(pg_database: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        yield conn


def _pg_contains(conn: psycopg.Connection[Any], container: Any, contained: Any) -> bool:
    row = conn.execute(
        "SELECT %s::jsonb @> %s::jsonb", (json.dumps(container), json.dumps(contained))
    ).fetchone()
    assert row is not None
    return bool(row[0])


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(pair=_pairs())
def test_json_contains_is_postgres_containment(
    pg_conn: psycopg.Connection[Any], pair: tuple[Any, Any]
) -> None:
    container, contained = pair
    expected = _pg_contains(pg_conn, container, contained)
    assert json_contains(container, contained) is expected
    # The SQL function SQLite calls: JSON text in, 0/1 out.
    assert _sqlite_json_contains(json.dumps(container), json.dumps(contained)) == int(expected)


@pytest.mark.parametrize(
    ("container", "contained", "expected"),
    [
        ([1, 2, 3], 1, True),  # an array holds a scalar at the top level...
        ({"a": [1]}, {"a": 1}, False),  # ...but not below it
        ([[1, 2]], [1], False),
        ([[1, 2]], [[1]], True),
        ([1, [2]], [[2], 1], True),
        ([{"a": 1}], {"a": 1}, False),
        ("a", ["a"], False),
        (1, 1.0, True),
        (True, 1, False),
        ([True], [1], False),
        (None, None, True),
        ({}, [], False),
        ([], {}, False),
        ([1], [], True),
        ({"a": {"b": [1, {"c": None}]}}, {"a": {"b": [{}]}}, True),
    ],
)
def test_json_contains_known_cases(
    pg_conn: psycopg.Connection[Any], container: Any, contained: Any, expected: bool
) -> None:
    assert _pg_contains(pg_conn, container, contained) is expected
    assert json_contains(container, contained) is expected


def test_sqlite_function_treats_sql_null_as_no_match() -> None:
    assert _sqlite_json_contains(None, "{}") == 0
    assert _sqlite_json_contains("{}", None) == 0


def test_database_url_forms(tmp_path: Path) -> None:
    sqlite_db = Database.from_settings(DatabaseSettings(), tmp_path / "d")
    pg_db = Database.from_settings(
        DatabaseSettings(url="postgresql://u:p@h:5432/db"), tmp_path / "unused"
    )
    assert sqlite_db.url == f"sqlite+aiosqlite:///{(tmp_path / 'd' / 'fawn.db').resolve()}"
    assert pg_db.url == "postgresql+psycopg://u:p@h:5432/db"
    assert (sqlite_db.is_postgres, pg_db.is_postgres) == (False, True)
    assert (tmp_path / "d").is_dir() and not (tmp_path / "unused").exists()


# -- owners ---------------------------------------------------------------------------------

ALICE = Scope(user_id="alice")
BOB = Scope(user_id="bob")
ADMIN = Scope(user_id="admin", every_owner=True)


async def test_rows_of_another_owner_look_missing(repo: ThreadRepository) -> None:
    mine = await repo.create("t-a", metadata={"k": 1}, scope=ALICE)
    assert mine.user_id == "alice"
    assert await repo.get("t-a", scope=ALICE) == mine
    assert await repo.get("t-a", scope=BOB) is None
    assert await repo.get("t-a", scope=ADMIN) == mine
    assert await repo.update_metadata("t-a", {"x": 1}, scope=BOB) is None
    assert await repo.delete("t-a", scope=BOB) is False
    assert await repo.get("t-a", scope=ALICE) == mine  # untouched
    with pytest.raises(ThreadExists):  # the id is taken, whoever asks
        await repo.create("t-a", scope=BOB, if_exists="do_nothing")
    assert await repo.owner_of("t-a") == "alice"
    assert await repo.delete("t-a", scope=ADMIN) is True


async def test_search_and_count_are_scoped_in_sql(repo: ThreadRepository) -> None:
    for i, scope in enumerate((ALICE, ALICE, BOB)):
        await repo.create(f"t-{i}", metadata={"tag": "x", "team": ["red"]}, scope=scope)
    flt = ThreadFilter(metadata={"tag": "x"})
    found, total = await repo.search(flt, scope=ALICE, limit=10)
    assert (sorted(r.thread_id for r in found), total) == (["t-0", "t-1"], 2)
    assert await repo.count(flt, scope=BOB) == 1
    assert await repo.count(flt, scope=ADMIN) == 3
    assert await repo.count(ThreadFilter(ids=["t-2"]), scope=ALICE) == 0
    # metadata documents a row must contain (compiled authorization filters)
    red = Scope(user_id="x", every_owner=True, metadata=({"team": ["red"]},))
    blue = Scope(user_id="x", every_owner=True, metadata=({"team": ["blue"]},))
    assert await repo.count(ThreadFilter(), scope=red) == 3
    assert await repo.count(ThreadFilter(), scope=blue) == 0
    assert await repo.get("t-0", scope=blue) is None


async def test_reassign_moves_ownership_and_names_the_owner(repo: ThreadRepository) -> None:
    await repo.create("t-1", metadata={"user_id": "u1", "k": 1}, scope=SYSTEM)
    await repo.create("t-2", scope=ALICE)
    assert await repo.reassign("default", "admin") == ["t-1"]
    moved = await repo.get("t-1", scope=Scope(user_id="admin"))
    assert moved is not None and moved.metadata == {"user_id": "admin", "k": 1}
    assert await repo.owner_of("t-2") == "alice"
