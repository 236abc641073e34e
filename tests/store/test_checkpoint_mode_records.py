"""A thread's checkpoint mode on its row, and the run queue that honours it, on SQLite and
PostgreSQL: threads are recorded in the mode of the server that creates them, a queue in the
other mode neither admits nor claims runs on them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import pytest

from fawn.config.settings import DatabaseSettings
from fawn.store.database import Database
from fawn.store.errors import CheckpointModeMismatch
from fawn.store.run_queue import NewRun, RunQueue
from fawn.store.scope import SYSTEM
from fawn.store.threads import ThreadRepository
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
    db = Database.from_settings(settings, tmp_path_factory.mktemp("modes"))
    await db.migrate()
    try:
        yield db
    finally:
        await db.dispose()


def new_run(thread_id: str) -> NewRun:
    return NewRun(
        run_id=str(uuid.uuid4()),
        thread_id=thread_id,
        assistant_id="lead_agent",
        metadata={},
        kwargs={},
        multitask_strategy="enqueue",
        spec={},
    )


async def test_a_thread_records_the_mode_it_was_created_in(database: Database) -> None:
    delta = ThreadRepository(database, "delta")
    created = await delta.create(f"t-{uuid.uuid4()}", scope=SYSTEM)
    read = await ThreadRepository(database, "full").get(created.thread_id, scope=SYSTEM)

    assert read is not None
    assert (created.checkpoint_mode, read.checkpoint_mode) == ("delta", "delta")
    assert "checkpoint_mode" not in read.as_dict()  # not a field of the SDK's Thread
    read.require_mode("delta")
    with pytest.raises(CheckpointModeMismatch) as raised:
        read.require_mode("full")
    assert (raised.value.thread_mode, raised.value.server_mode) == ("delta", "full")


async def test_a_queue_admits_and_claims_only_runs_of_threads_in_its_mode(
    database: Database,
) -> None:
    now = datetime.now(UTC)
    full, delta = RunQueue(database, "full"), RunQueue(database, "delta")
    # a run that creates its thread creates it in the queue's mode
    tid = f"t-{uuid.uuid4()}"
    created = await delta.admit(new_run(tid), now=now, create_thread={})
    record = await ThreadRepository(database).get(tid, scope=SYSTEM)
    assert record is not None and record.checkpoint_mode == "delta"

    with pytest.raises(CheckpointModeMismatch):
        await full.admit(new_run(tid), now=now)

    assert created.run.run_id in [r.run_id for r in await delta.runnable(1000)]
    assert created.run.run_id not in [r.run_id for r in await full.runnable(1000)]
    assert await delta.claim(created.run.run_id, tid, "worker-d", now) is not None
