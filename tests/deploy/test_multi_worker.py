"""Two gateway workers sharing PostgreSQL (records, checkpoints, leases) and Redis (streams):
a run admitted by one is observed, cancelled and ordered through the other."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
async def pair(
    make_server: Callable[..., LiveServer], pg_url: str, tmp_path: Any
) -> AsyncIterator[tuple[LiveServer, LiveServer, LangGraphClient, LangGraphClient]]:
    prefix = f"fawn-test-{uuid.uuid4().hex[:10]}"
    shared: dict[str, Any] = {
        "database": {"url": pg_url},
        "streams": {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix},
        "runs": {
            "renew_seconds": 0.2,
            "outage_tolerance_seconds": 1.0,
            "sweep_seconds": 0.3,
            "lease_seconds": 2.0,
        },
    }
    # one data dir: thread workspaces live on storage both workers see
    a = make_server(tmp_path / "a", data_dir=str(tmp_path / "shared-data"), **shared)
    b = make_server(tmp_path / "b", data_dir=str(tmp_path / "shared-data"), **shared)
    clients = (get_client(url=a.url, timeout=60), get_client(url=b.url, timeout=60))
    try:
        yield a, b, *clients
    finally:
        for client in clients:
            await client.aclose()
        r = aioredis.from_url(REDIS_URL)
        keys = [k async for k in r.scan_iter(f"{prefix}:*")]
        if keys:
            await r.delete(*keys)
        await r.aclose()


@pytest.fixture
def workers(
    pair: tuple[LiveServer, LiveServer, LangGraphClient, LangGraphClient],
) -> tuple[LangGraphClient, LangGraphClient]:
    return pair[2], pair[3]


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_a_run_on_one_worker_streams_through_the_other(
    workers: tuple[LangGraphClient, LangGraphClient], stub: StubServerThread, key: str
) -> None:
    a, b = workers
    stub.add_script(key, [{"content": " ".join(f"w{i}" for i in range(20)), "chunk_delay": 0.02}])
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(
        tid, "lead_agent", input=user(key), stream_mode=["values", "messages-tuple"]
    )

    through_b = [
        (p.event, p.id) async for p in b.runs.join_stream(tid, run["run_id"], last_event_id="0")
    ]
    through_a = [
        (p.event, p.id) async for p in a.runs.join_stream(tid, run["run_id"], last_event_id="0")
    ]

    assert through_b == through_a
    assert through_b[0][0] == "metadata" and through_b[-1][0] == "end"
    assert [int(i) for _, i in through_b] == list(range(1, len(through_b) + 1))
    assert (await b.runs.get(tid, run["run_id"]))["status"] == "success"


async def test_cancel_through_the_other_worker(
    workers: tuple[LangGraphClient, LangGraphClient], stub: StubServerThread, key: str
) -> None:
    a, b = workers
    stub.add_script(key, [{"content": "slow", "delay": 5.0}])
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(tid, "lead_agent", input=user(key))
    for _ in range(400):  # bounded: the run starts within a moment
        if (await b.runs.get(tid, run["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.05)

    await b.runs.cancel(tid, run["run_id"], wait=True)

    finished = await a.runs.get(tid, run["run_id"])
    assert (finished["status"], finished["stop_reason"]) == ("interrupted", "cancelled")
    assert (await b.threads.get(tid))["status"] == "interrupted"


async def test_reject_admits_exactly_one_across_workers(
    workers: tuple[LangGraphClient, LangGraphClient], stub: StubServerThread, key: str
) -> None:
    a, b = workers
    stub.add_script(key, [{"content": "hold", "delay": 1.0}])
    tid = (await a.threads.create())["thread_id"]

    async def attempt(client: LangGraphClient) -> int:
        try:
            await client.runs.create(
                tid, "lead_agent", input=user(key), multitask_strategy="reject"
            )
        except httpx.HTTPStatusError as exc:
            return exc.response.status_code
        return 200

    codes = await asyncio.gather(*(attempt(a if i % 2 else b) for i in range(20)))
    assert sorted(codes) == [200] + [409] * 19


async def test_a_dead_workers_run_ends_for_followers_on_the_other_worker(
    pair: tuple[LiveServer, LiveServer, LangGraphClient, LangGraphClient],
    stub: StubServerThread,
    key: str,
) -> None:
    server_a, _, a, b = pair
    stub.add_script(key, [{"content": "never", "delay": 30.0}])
    tid = (await a.threads.create())["thread_id"]
    run = await a.runs.create(tid, "lead_agent", input=user(key))
    seen: list[tuple[str, Any]] = []

    async def follow() -> None:
        async for part in b.runs.join_stream(tid, run["run_id"], last_event_id="0"):
            seen.append((part.event, part.data))

    follower = asyncio.create_task(follow())
    for _ in range(400):  # bounded: until the run is executing on A
        if seen:
            break
        await asyncio.sleep(0.05)
    server_a.kill()  # SIGKILL: A never finalizes; B's sweep recovers the run

    await asyncio.wait_for(follower, timeout=20)

    assert seen[0] == ("metadata", {"run_id": run["run_id"], "thread_id": tid, "attempt": 1})
    assert seen[-2:] == [
        (
            "error",
            {
                "error": "RunOrphaned",
                "message": "the worker that owned this run stopped renewing its lease",
            },
        ),
        ("end", {"run_id": run["run_id"], "status": "error"}),
    ]
    recovered = await b.runs.get(tid, run["run_id"])
    assert (recovered["status"], recovered["stop_reason"]) == ("error", "orphaned")
