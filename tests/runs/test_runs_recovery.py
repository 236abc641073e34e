"""A server killed (SIGKILL) during a run leaves no run active forever: on restart the run is
``error`` with a reason, and the thread takes new runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.runs.runs_helpers import (
    TITLE,
    Lead,
    ai_invoked,
    human,
    new_thread,
    script,
    slow_text,
    slow_turn,
    user,
    wait_status,
    wait_streaming,
)
from tests.support.live import LiveServer
from tests.support.pg import create_database, drop_database

REASON = "the server stopped while this run was in progress (recovered at startup)"


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    name, url = create_database()
    try:
        yield url
    finally:
        drop_database(name)


async def _kill_during_a_run_and_restart(live: LiveServer, stub: Any, key: str) -> None:
    # the thread's conversation has no answer yet after the crash, so the new run gets the
    # script's first (slow) turn again
    script(stub, key, slow_turn(20))
    client = get_client(url=live.url, timeout=60)
    try:
        tid = await new_thread(client)
        # "sync": every finished step is durable before the next starts, so what the thread
        # holds after the crash is known ("async", the default, may lose the last steps)
        run = await client.runs.create(
            tid, "lead_agent", input=user(key), stream_mode="messages-tuple", durability="sync"
        )
        await wait_streaming(client, tid, run["run_id"])
        assert (await client.runs.get(tid, run["run_id"]))["status"] == "running"
    finally:
        await client.aclose()

    live.kill()
    live.start()

    client = get_client(url=live.url, timeout=60)
    try:
        orphan = await client.runs.get(tid, run["run_id"])
        assert (orphan["status"], orphan["error"], orphan["stop_reason"]) == (
            "error",
            REASON,
            "orphaned",
        )
        thread = await client.threads.get(tid)
        assert (thread["status"], thread["error"]) == (
            "error",
            {"error": "RunOrphaned", "message": REASON},
        )
        joined = await client.runs.join(tid, run["run_id"])
        assert joined == {"__error__": {"error": "RunOrphaned", "message": REASON}}
        async with httpx.AsyncClient(base_url=live.url) as http:
            gone = await http.get(f"/threads/{tid}/runs/{run['run_id']}/stream")
        assert gone.status_code == 404

        answer = await client.runs.wait(tid, "lead_agent", input=user("still there?"))
        lead = Lead.of(live, tid)
        assert answer == lead.state(
            human(key), human("still there?"), ai_invoked(slow_text(20)), title=TITLE
        )
        runs = await client.runs.list(tid)
        assert [r["status"] for r in runs] == ["success", "error"]
        assert (await client.threads.get(tid))["status"] == "idle"
    finally:
        await client.aclose()


async def test_sigkill_during_a_run_on_sqlite(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    await _kill_during_a_run_and_restart(make_server(), stub, key)


async def test_sigkill_during_a_run_on_postgres_before_the_lease_expires(
    make_server: Callable[..., LiveServer], stub: Any, key: str, fresh_pg: str
) -> None:
    """The lease (30 s by default) has not expired when the server is back: the run is
    recovered because its owner was a process of this host that no longer exists."""
    live = make_server(database={"url": fresh_pg})
    await _kill_during_a_run_and_restart(live, stub, key)


async def test_a_peer_recovers_the_runs_of_a_dead_worker(
    make_server: Callable[..., LiveServer], stub: Any, key: str, fresh_pg: str
) -> None:
    """Two gateways share PostgreSQL; one dies mid-run and stays dead. The survivor's sweep
    marks the orphan ``error`` (short lease and sweep here) and the thread takes new runs."""
    short = {
        "renew_seconds": 0.2,
        "outage_tolerance_seconds": 1.0,
        "sweep_seconds": 0.3,
        "lease_seconds": 2.0,
    }
    doomed = make_server(database={"url": fresh_pg}, runs=short)
    survivor = make_server(database={"url": fresh_pg}, runs=short)
    script(stub, key, slow_turn(20))
    client = get_client(url=doomed.url, timeout=60)
    try:
        tid = await new_thread(client)
        # "sync": every finished step is durable before the next starts, so what the thread
        # holds after the crash is known ("async", the default, may lose the last steps)
        run = await client.runs.create(
            tid, "lead_agent", input=user(key), stream_mode="messages-tuple", durability="sync"
        )
        await wait_streaming(client, tid, run["run_id"])
    finally:
        await client.aclose()
    doomed.kill()

    client = get_client(url=survivor.url, timeout=60)
    try:
        orphan = await wait_status(client, tid, run["run_id"], ("error",))
        assert (orphan["error"], orphan["stop_reason"]) == (
            "the worker that owned this run stopped renewing its lease",
            "orphaned",
        )
        answer = await client.runs.wait(tid, "lead_agent", input=user("anyone?"))
        assert answer == Lead.of(survivor, tid).state(
            human(key), human("anyone?"), ai_invoked(slow_text(20)), title=TITLE
        )
    finally:
        await client.aclose()
