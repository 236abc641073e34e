"""Threads, metadata, state, history and files survive a restart on the same data directory
(and the same PostgreSQL database), whether the server stopped cleanly or was killed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.support.live import LiveServer
from tests.support.pg import create_database, drop_database


@pytest.fixture
def live(
    request: pytest.FixtureRequest, make_server: Callable[..., LiveServer]
) -> Iterator[LiveServer]:
    """A dedicated server; on PostgreSQL with a database of its own, dropped afterwards."""
    if request.param == "sqlite":
        yield make_server()
        return
    name, url = create_database()
    server = make_server(database={"url": url})
    try:
        yield server
    finally:
        server.stop()
        drop_database(name)


async def _snapshot(url: str, thread_ids: list[str], key: str) -> dict[str, Any]:
    """Everything a client can read about the threads."""
    client = get_client(url=url, timeout=30)
    try:
        return {
            "threads": [await client.threads.get(tid) for tid in thread_ids],
            "states": [await client.threads.get_state(tid) for tid in thread_ids],
            "histories": [await client.threads.get_history(tid, limit=100) for tid in thread_ids],
            "search": await client.threads.search(metadata={"suite": key}, sort_by="thread_id"),
            "count": await client.threads.count(metadata={"suite": key}),
        }
    finally:
        await client.aclose()


async def _populate(url: str, key: str) -> list[str]:
    client = get_client(url=url, timeout=30)
    try:
        first = await client.threads.create(
            metadata={"suite": key, "user_id": "u1", "tags": ["research"]}
        )
        second = await client.threads.create(thread_id=f"{key}-b", metadata={"suite": key})
        tid = first["thread_id"]
        await client.threads.update_state(
            tid,
            {
                "title": "Research Session",
                "artifacts": ["/mnt/user-data/outputs/a.md"],
                "messages": [{"role": "user", "content": "hello", "id": "m1"}],
            },
        )
        await client.threads.update_state(
            tid,
            {
                "artifacts": ["/mnt/user-data/outputs/b.md"],
                "todos": [{"content": "read", "status": "in_progress"}],
                "viewed_images": {"/mnt/user-data/uploads/p.png": {"mime_type": "image/png"}},
            },
        )
        await client.threads.update(second["thread_id"], metadata={"patched": True})
        copy = await client.threads.copy(tid)
        return [tid, second["thread_id"], copy["thread_id"]]
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    ("live", "stop"),
    # A kill on PostgreSQL would test PostgreSQL's durability, not ours: SQLite is the one to kill.
    [("sqlite", "restart"), ("postgres", "restart"), ("sqlite", "kill")],
    indirect=["live"],
)
async def test_everything_survives_a_restart(live: LiveServer, key: str, stop: str) -> None:
    thread_ids = await _populate(live.url, key)
    outputs = live.data_dir / "threads" / thread_ids[0] / "user-data" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "a.md").write_text("report")
    before = await _snapshot(live.url, thread_ids, key)
    assert before["count"] == 3
    assert len(before["histories"][0]) == 2

    if stop == "kill":  # no shutdown hooks: what was answered was durable
        live.kill()
        live.start()
    else:
        live.restart()

    assert await _snapshot(live.url, thread_ids, key) == before
    assert (outputs / "a.md").read_text() == "report"

    # The restarted server keeps working on the same threads.
    client = get_client(url=live.url, timeout=30)
    try:
        done = await client.threads.update_state(thread_ids[0], {"title": "After restart"})
        history = await client.threads.get_history(thread_ids[0])
    finally:
        await client.aclose()
    assert [h["checkpoint_id"] for h in history] == [
        done["checkpoint_id"],
        *(h["checkpoint_id"] for h in before["histories"][0]),
    ]
    assert history[0]["values"] == {**before["states"][0]["values"], "title": "After restart"}
