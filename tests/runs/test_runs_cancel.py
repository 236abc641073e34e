"""Cancellation: interrupt keeps the checkpoint, rollback restores the pre-run state, and a
dropped client cancels the run only when it asked to."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.runs.runs_helpers import (
    TITLE,
    Event,
    Lead,
    ai,
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
from tests.support.problems import problem


async def _slow_run(client: LangGraphClient, tid: str, prompt: str) -> str:
    run = await client.runs.create(
        tid, "lead_agent", input=user(prompt), stream_mode="messages-tuple"
    )
    await wait_streaming(client, tid, run["run_id"])
    return str(run["run_id"])


async def test_cancel_interrupt_with_wait_is_200_and_keeps_the_checkpoint(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn())
    tid = await new_thread(client)
    run_id = await _slow_run(client, tid, key)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.post(
            f"/threads/{tid}/runs/{run_id}/cancel", params={"wait": True, "action": "interrupt"}
        )
        again = await http.post(f"/threads/{tid}/runs/{run_id}/cancel")
    # what join answers (the JS SDK parses every 200 as JSON): the values the cancel kept
    assert (response.status_code, response.headers["content-type"]) == (200, "application/json")
    assert response.json() == Lead.of(server, tid).state(human(key))
    run = await client.runs.get(tid, run_id)
    assert (run["status"], run["stop_reason"], run["error"]) == ("interrupted", "cancelled", None)
    assert again.status_code == 404
    assert again.json() == problem(f"run {run_id} has already finished (interrupted)", "not_found")
    snapshot = await client.threads.get_state(tid)
    assert (snapshot["values"], snapshot["next"]) == (
        Lead.of(server, tid).state(human(key)),
        ["model"],
    )
    assert (await client.threads.get(tid))["status"] == "interrupted"


async def test_cancel_without_wait_is_202_and_the_run_ends_interrupted(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn())
    tid = await new_thread(client)
    run_id = await _slow_run(client, tid, key)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.post(f"/threads/{tid}/runs/{run_id}/cancel")
    assert response.status_code == 202
    await wait_status(client, tid, run_id, ("interrupted",))
    assert (await client.threads.get(tid))["status"] == "interrupted"


async def test_cancel_of_finished_or_unknown_runs_is_404(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "done already"})
    tid = await new_thread(client)
    run = await client.runs.create(tid, "lead_agent", input=user(key))
    await client.runs.join(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        await client.runs.cancel(tid, run["run_id"])
    with pytest.raises(httpx.HTTPStatusError) as caught:  # with wait, httpx's own error
        await client.runs.cancel(tid, "00000000-0000-0000-0000-000000000000", wait=True)
    assert caught.value.response.status_code == 404
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"


async def test_cancel_rollback_restores_the_pre_run_state_exactly(
    mode_server: LiveServer, mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    client, server = mode_client, mode_server
    script(stub, key, {"content": "kept"}, slow_turn())
    tid = await new_thread(client)
    first = await client.runs.create(tid, "lead_agent", input=user(key))
    await client.runs.join(tid, first["run_id"])
    before = await client.threads.get_state(tid)
    assert before["values"] == Lead.of(server, tid).state(
        human(key), ai_invoked("kept"), title=TITLE
    )

    run_id = await _slow_run(client, tid, "second")
    answered = await client.runs.cancel(tid, run_id, wait=True, action="rollback")
    assert answered == before["values"]

    after = await client.threads.get_state(tid)
    assert after["values"] == before["values"]
    assert (after["next"], after["tasks"], after["interrupts"]) == ([], [], [])
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, run_id)
    assert [r["run_id"] for r in await client.runs.list(tid)] == [first["run_id"]]
    thread = await client.threads.get(tid)
    assert (thread["status"], thread["values"]) == ("idle", before["values"])


async def test_cancel_rollback_of_a_threads_first_run_empties_it(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn())
    tid = await new_thread(client)
    before = await client.threads.get_state(tid)
    run_id = await _slow_run(client, tid, key)
    await client.runs.cancel(tid, run_id, wait=True, action="rollback")
    after = await client.threads.get_state(tid)
    assert (after["values"], after["next"], after["checkpoint"]) == (
        before["values"],
        before["next"],
        before["checkpoint"],
    )
    assert await client.runs.list(tid) == []
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_cancel_a_queued_run_before_it_starts(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(10), {"content": "never asked"})
    tid = await new_thread(client)
    first = await _slow_run(client, tid, key)
    queued = await client.runs.create(tid, "lead_agent", input=user("queued"))
    await client.runs.cancel(tid, queued["run_id"], wait=True)
    assert (await client.runs.get(tid, queued["run_id"]))["status"] == "interrupted"
    final = await client.runs.join(tid, first)
    assert (await client.runs.get(tid, first))["status"] == "success"
    assert final == Lead.of(server, tid).state(human(key), ai(slow_text(10)), title=TITLE)
    assert len([r for r in stub.requests_for(key) if r.get("tools")]) == 1


async def test_cancel_many_by_thread_and_by_run_ids(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(400))  # still running when the test cancels it, under load
    one, two, three = [await new_thread(client) for _ in range(3)]
    run_one = await _slow_run(client, one, key)
    run_two = await _slow_run(client, two, key)
    run_three = await _slow_run(client, three, key)

    await client.runs.cancel_many(thread_id=one)
    assert (await wait_status(client, one, run_one, ("interrupted",)))["status"] == "interrupted"
    await client.runs.cancel_many(run_ids=[run_two], action="rollback")
    for _ in range(500):
        if not await client.runs.list(two):
            break
        await asyncio.sleep(0.02)
    assert await client.runs.list(two) == []
    assert (await client.runs.get(three, run_three))["status"] == "running"
    await client.runs.cancel(three, run_three, wait=True)


async def test_cancel_many_needs_a_selector(server: LiveServer, client: LangGraphClient) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/runs/cancel", json={})
    assert response.status_code == 422
    assert response.json() == problem("give thread_id, run_ids or status", "invalid_input")
    with pytest.raises(UnprocessableEntityError):
        await client.runs.cancel_many(status="bogus")  # type: ignore[arg-type]


async def _drop_mid_run(client: LangGraphClient, tid: str, prompt: str, on_disconnect: str) -> str:
    stream = client.runs.stream(
        tid,
        "lead_agent",
        input=user(prompt),
        stream_mode="messages-tuple",
        on_disconnect=on_disconnect,  # type: ignore[arg-type]
    )
    seen: list[Event] = []
    async for part in stream:
        seen.append(Event(part.event, part.data, part.id))
        if part.event == "messages":
            break
    await stream.aclose()
    return str(seen[0].data["run_id"])


async def test_on_disconnect_cancel_interrupts_the_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn())
    tid = await new_thread(client)
    run_id = await _drop_mid_run(client, tid, key, "cancel")
    run = await wait_status(client, tid, run_id, ("success", "error", "interrupted"))
    assert (run["status"], run["stop_reason"]) == ("interrupted", "cancelled")
    assert run["kwargs"]["on_disconnect"] == "cancel"
    values = (await client.threads.get_state(tid))["values"]
    assert values == Lead.of(server, tid).state(human(key))


async def test_on_disconnect_continue_lets_the_run_finish(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(10))
    tid = await new_thread(client)
    run_id = await _drop_mid_run(client, tid, key, "continue")
    assert await client.runs.join(tid, run_id) == Lead.of(server, tid).state(
        human(key), ai(slow_text(10)), title=TITLE
    )
    assert (await client.runs.get(tid, run_id))["status"] == "success"
