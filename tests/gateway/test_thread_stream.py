"""``threads.join_stream``: the output of every run executed on a thread, in order."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.problems import problem

FIRST_RUN_VALUES = 6  # input, sandbox, thread_data, uploads, model, title (see tests/runs)


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def collect(stream: Any, runs: int) -> list[tuple[str, Any, str | None]]:
    """Events until ``runs`` run_done events have been seen."""
    seen: list[tuple[str, Any, str | None]] = []
    done = 0
    async with contextlib.aclosing(stream), asyncio.timeout(30):
        async for part in stream:
            seen.append((part.event, part.data, part.id))
            if part.event == "run_done":
                done += 1
                if done == runs:
                    break
    return seen


async def replay(client: LangGraphClient, tid: str, rid: str) -> list[tuple[str, Any, str]]:
    """The run's own complete stream, as the thread stream should relay it."""
    events = []
    async for part in client.runs.join_stream(tid, rid, last_event_id="0"):
        name = "run_done" if part.event == "end" else part.event
        events.append((name, part.data, f"{rid}:{part.id}"))
    return events


async def test_run_modes_follow_two_runs_in_order(
    client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "one", "delay": 0.3}], title="T")
    thread = await client.threads.create()
    tid = thread["thread_id"]
    stream = await client.threads.join_stream(tid)
    follower = asyncio.create_task(collect(stream, runs=2))
    await asyncio.sleep(0.3)  # the follower is attached before the first run exists
    first = await client.runs.create(tid, "lead_agent", input=user(f"{key} a"))
    second = await client.runs.create(tid, "lead_agent", input=user(f"{key} b"))
    events = await follower

    expected = await replay(client, tid, first["run_id"]) + await replay(
        client, tid, second["run_id"]
    )
    assert events == expected
    names = [name for name, _, _ in events]
    assert names.count("metadata") == 2 and names.count("run_done") == 2
    assert events[0][1] == {"run_id": first["run_id"], "thread_id": tid, "attempt": 1}
    assert events[-1][1] == {"run_id": second["run_id"], "status": "success"}


async def test_lifecycle_and_state_update_modes(
    client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "ok", "delay": 0.3}], title="T")
    tid = (await client.threads.create())["thread_id"]
    lifecycle = asyncio.create_task(
        collect(await client.threads.join_stream(tid, stream_mode="lifecycle"), runs=1)
    )
    states: list[tuple[str, Any, str | None]] = []

    async def state_updates() -> None:
        stream = await client.threads.join_stream(tid, stream_mode="state_update")
        async with contextlib.aclosing(stream):
            async for part in stream:
                states.append((part.event, part.data, part.id))

    follower = asyncio.create_task(state_updates())
    await asyncio.sleep(0.3)
    run = await client.runs.create(
        tid, "lead_agent", input=user(key), stream_mode=["values", "updates"]
    )
    events = await lifecycle
    assert [(name, data) for name, data, _ in events] == [
        ("metadata", {"run_id": run["run_id"], "thread_id": tid, "attempt": 1}),
        ("run_done", {"run_id": run["run_id"], "status": "success"}),
    ]
    await asyncio.sleep(0.3)  # state_update never ends by itself: the client closes it
    follower.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await follower
    full = await replay(client, tid, run["run_id"])
    assert states == [event for event in full if event[0] == "values"]
    assert len(states) == FIRST_RUN_VALUES


async def test_resume_with_last_event_id_and_bad_input(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "ok", "delay": 0.5}], title="T")
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "lead_agent", input=user(key))
    full = await collect(await client.threads.join_stream(tid), runs=1)
    assert [n for n, _, _ in full][0] == "metadata"
    resumed = await collect(await client.threads.join_stream(tid, last_event_id=full[0][2]), runs=1)
    assert resumed == full[1:]
    assert all(eid and eid.startswith(run["run_id"] + ":") for _, _, eid in full)

    async with httpx.AsyncClient(base_url=server.url) as http:
        bad_mode = await http.get(f"/threads/{tid}/stream", params={"stream_mode": "nope"})
        bad_cursor = await http.get(f"/threads/{tid}/stream", headers={"Last-Event-ID": "7"})
        unknown = await http.get("/threads/00000000-0000-0000-0000-000000000000/stream")
    assert bad_mode.status_code == 422
    assert bad_mode.json() == problem(
        "unsupported thread stream_mode nope; supported: run_modes, lifecycle, state_update",
        "invalid_input",
    )
    assert bad_cursor.status_code == 422
    assert unknown.status_code == 404
