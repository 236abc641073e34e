"""Concurrent runs on one thread follow the requested multitask strategy."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.runs.runs_helpers import (
    TITLE,
    Lead,
    ai,
    ai_invoked,
    human,
    new_thread,
    script,
    slow_text,
    slow_turn,
    user,
    wait_streaming,
)
from tests.support.live import LiveServer


async def test_reject_admits_exactly_one_of_twenty_concurrent_runs(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(20, 0.05))
    tid = await new_thread(client)
    results = await asyncio.gather(
        *(
            client.runs.create(
                tid,
                "lead_agent",
                input=user(key),
                multitask_strategy="reject",
                stream_mode="messages-tuple",
            )
            for _ in range(20)
        ),
        return_exceptions=True,
    )
    accepted = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, ConflictError)]
    assert (len(accepted), len(refused)) == (1, 19), results
    assert all("multitask_strategy 'reject' refuses to start another" in str(e) for e in refused)
    (run,) = accepted
    await client.runs.cancel(tid, run["run_id"], wait=True)
    assert [r["run_id"] for r in await client.runs.list(tid)] == [run["run_id"]]


async def test_reject_is_409_while_a_run_is_pending_or_running(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(20, 0.05), {"content": "second"})
    tid = await new_thread(client)
    first = await client.runs.create(
        tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
    )
    with pytest.raises(httpx.HTTPStatusError) as caught:  # wait raises httpx's own error
        await client.runs.wait(tid, "lead_agent", input=user("x"), multitask_strategy="reject")
    assert caught.value.response.status_code == 409
    await client.runs.join(tid, first["run_id"])
    answer = await client.runs.wait(tid, "lead_agent", input=user("x"), multitask_strategy="reject")
    assert answer["messages"][-1]["content"] == "second"


async def test_interrupt_strategy_interrupts_the_first_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """The first run stops where it was (its input stays in the thread); the second runs
    on top of it. Both turns are the script's first: neither conversation has an answer yet."""
    script(stub, key, slow_turn(20, 0.05))
    tid = await new_thread(client)
    first = await client.runs.create(
        tid, "lead_agent", input=user(f"{key} one"), stream_mode="messages-tuple"
    )
    await wait_streaming(client, tid, first["run_id"])
    answer = await client.runs.wait(
        tid, "lead_agent", input=user("two"), multitask_strategy="interrupt"
    )
    stopped = await client.runs.get(tid, first["run_id"])
    assert (stopped["status"], stopped["stop_reason"]) == ("interrupted", "cancelled")
    lead = Lead.of(server, tid)
    expected = lead.state(human(f"{key} one"), human("two"), ai_invoked(slow_text(20)), title=TITLE)
    assert answer == expected
    assert (await client.threads.get_state(tid))["values"] == expected
    runs = await client.runs.list(tid)
    assert [(r["run_id"], r["status"]) for r in runs] == [
        (runs[0]["run_id"], "success"),
        (first["run_id"], "interrupted"),
    ]
    assert runs[0]["multitask_strategy"] == "interrupt"
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_rollback_strategy_deletes_the_first_run_and_its_effects(
    mode_server: LiveServer, mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    client, server = mode_client, mode_server
    script(stub, key, slow_turn(20, 0.05))
    script(stub, f"{key}-second", {"content": "only me"})
    tid = await new_thread(client)
    first = await client.runs.create(
        tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
    )
    await wait_streaming(client, tid, first["run_id"])
    answer = await client.runs.wait(
        tid, "lead_agent", input=user(f"{key}-second"), multitask_strategy="rollback"
    )
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, first["run_id"])
    lead = Lead.of(server, tid)
    expected = lead.state(human(f"{key}-second"), ai_invoked("only me"), title=TITLE)
    assert answer == expected
    assert (await client.threads.get_state(tid))["values"] == expected
    (only,) = await client.runs.list(tid)
    assert (only["status"], only["multitask_strategy"]) == ("success", "rollback")
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_enqueue_runs_one_after_another(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(10, 0.05), {"content": "second answer"})
    tid = await new_thread(client)
    first = await client.runs.create(
        tid, "lead_agent", input=user(f"{key} one"), stream_mode="messages-tuple"
    )
    second = await client.runs.create(
        tid, "lead_agent", input=user("two"), multitask_strategy="enqueue"
    )
    assert second["status"] == "pending"
    await wait_streaming(client, tid, first["run_id"])
    assert (await client.runs.get(tid, second["run_id"]))["status"] == "pending"
    final = await client.runs.join(tid, second["run_id"])
    statuses = [(await client.runs.get(tid, r["run_id"]))["status"] for r in (first, second)]
    assert statuses == ["success", "success"]
    lead = Lead.of(server, tid)
    assert final == lead.state(
        human(f"{key} one"),
        ai(slow_text(10)),
        human("two"),
        ai_invoked("second answer"),
        title=TITLE,
    )
    assert (await client.threads.get(tid))["status"] == "idle"
