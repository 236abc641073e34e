"""Every ``client.runs.*`` method against a live server, whole responses asserted."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.runs.runs_helpers import (
    ANY_ISO,
    ANY_UUID,
    TITLE,
    Expected,
    Lead,
    ai,
    ai_invoked,
    collect,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    script,
    slow_turn,
    user,
    wait_status,
    wait_streaming,
)
from tests.support.live import LiveServer

LEAD_AGENT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lead_agent"))


def expected_usage(stub: Any, key: str, *answers: str) -> dict[str, int]:
    """The run's token usage as the stub counts it (whitespace-separated words): every
    request's messages as the prompt, the scripted ``answers`` and the titles as completions."""
    requests = stub.requests_for(key)
    prompt = sum(len(str(m["content"]).split()) for r in requests for m in r["messages"])
    titles = sum(1 for r in requests if not r.get("tools"))
    completion = sum(len(a.split()) for a in answers) + titles * len(TITLE.split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def run_shape(
    tid: str,
    *,
    status: str,
    input: Any = None,
    stream_mode: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    strategy: str = "enqueue",
    usage: Any = None,
    stop_reason: str | None = None,
    error: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """A whole run record as the API answers it."""
    return {
        "run_id": ANY_UUID,
        "thread_id": tid,
        "assistant_id": LEAD_AGENT_ID,
        "created_at": ANY_ISO,
        "updated_at": ANY_ISO,
        "status": status,
        "metadata": metadata or {},
        "multitask_strategy": strategy,
        "kwargs": {
            "input": input,
            "command": None,
            "config": {"configurable": {}},
            "context": {
                "thinking_enabled": False,
                "reasoning_effort": None,
                "model_name": None,
                "is_plan_mode": False,
                "subagent_enabled": False,
                "max_concurrent_subagents": 3,
                "agent_name": None,
            },
            "stream_mode": stream_mode or ["values"],
            "subgraphs": False,
            "resumable": False,
            "interrupt_before": None,
            "interrupt_after": None,
            "checkpoint": None,
            "on_disconnect": "continue",
            "durability": None,
            **kwargs,
        },
        "error": error,
        "stop_reason": stop_reason,
        "usage": usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


async def test_create_then_join_get_and_list(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "background reply"})
    tid = await new_thread(client)
    run = await client.runs.create(tid, "lead_agent", input=user(key), metadata={"tag": "bg"})
    assert run == run_shape(tid, status="pending", input=user(key), metadata={"tag": "bg"})

    final = await client.runs.join(tid, run["run_id"])
    lead = Lead.of(server, tid)
    assert final == lead.state(human(key), ai_invoked("background reply"), title=TITLE)

    done = await client.runs.get(tid, run["run_id"])
    assert done == run_shape(
        tid,
        status="success",
        input=user(key),
        metadata={"tag": "bg"},
        stop_reason="completed",
        usage=expected_usage(stub, key, "background reply"),
    )
    assert done["run_id"] == run["run_id"]
    assert done["created_at"] == run["created_at"]
    assert await client.runs.list(tid) == [done]
    thread = await client.threads.get(tid)
    assert (thread["status"], thread["values"]) == ("idle", final)


async def test_streamed_run_records_token_usage(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    """Every model call of the run counts: the lead model's streamed answer and the title."""
    script(stub, key, {"content": "counted words here"})
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode="messages-tuple")
    )
    run = await client.runs.get(tid, events[0].data["run_id"])
    reply = (await client.threads.get_state(tid))["values"]["messages"][-1]
    assert reply == ai("counted words here")
    assert run["usage"] == expected_usage(stub, key, "counted words here")
    assert run["usage"]["completion_tokens"] == 3 + 2  # the answer's words and the title's
    assert run["usage"]["prompt_tokens"] > reply["usage_metadata"]["input_tokens"]


async def test_stream_sequence_and_wait(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "first"}, {"content": "second"})
    tid = await new_thread(client)
    events = await collect(client.runs.stream(tid, "lead_agent", input=user(f"{key} one")))
    run_id = events[0].data["run_id"]
    lead = Lead.of(server, tid)
    exchange = Expected(lead, run_id, f"{key} one", ai_invoked("first"))
    assert pairs(events) == [metadata_event(run_id, tid), *exchange.values(), end_event(run_id)]
    one = events[-2].data["messages"]
    answer = await client.runs.wait(tid, "lead_agent", input=user("two"))
    assert answer == lead.state(*one, human("two"), ai_invoked("second"), title=TITLE)
    assert (await client.threads.get_state(tid))["values"] == answer


async def test_list_pages_and_filters_newest_first(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "a"}, {"content": "b"}, {"content": "c"})
    tid = await new_thread(client)
    ids = []
    for text in ("one", "two", "three"):
        run = await client.runs.create(tid, "lead_agent", input=user(f"{key} {text}"))
        await client.runs.join(tid, run["run_id"])
        ids.append(run["run_id"])
    newest_first = ids[::-1]

    async def listed(**kw: Any) -> list[str]:
        return [r["run_id"] for r in await client.runs.list(tid, **kw)]

    assert await listed() == newest_first
    assert await listed(limit=2) == newest_first[:2]
    assert await listed(limit=2, offset=2) == newest_first[2:]
    assert await listed(offset=3) == []
    assert await listed(status="success") == newest_first
    assert await listed(status="error") == []
    async with httpx.AsyncClient(base_url=server.url) as http:
        page = await http.get(f"/threads/{tid}/runs", params={"limit": 2})
        last = await http.get(f"/threads/{tid}/runs", params={"limit": 2, "offset": 2})
    assert page.headers["x-pagination-total"] == "3"
    assert page.headers["x-pagination-next"] == "2"
    assert last.headers["x-pagination-total"] == "3"
    assert "x-pagination-next" not in last.headers


async def test_list_and_get_of_unknown_things_are_404(client: LangGraphClient) -> None:
    tid = await new_thread(client)
    with pytest.raises(NotFoundError):
        await client.runs.list(str(uuid.uuid4()))
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, str(uuid.uuid4()))
    with pytest.raises(httpx.HTTPStatusError) as caught:  # join raises httpx's own error
        await client.runs.join(tid, str(uuid.uuid4()))
    assert caught.value.response.status_code == 404
    with pytest.raises(NotFoundError):
        await client.runs.delete(tid, str(uuid.uuid4()))


async def test_delete_active_is_409_finished_is_204(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(20, 0.05))
    tid = await new_thread(client)
    run = await client.runs.create(tid, "lead_agent", input=user(key), stream_mode="messages-tuple")
    with pytest.raises(ConflictError):
        await client.runs.delete(tid, run["run_id"])
    await client.runs.join(tid, run["run_id"])
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.delete(f"/threads/{tid}/runs/{run['run_id']}")
    assert (response.status_code, response.content) == (204, b"")
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, run["run_id"])
    assert await client.runs.list(tid) == []


async def test_join_a_running_run_waits_for_its_values(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, slow_turn(10, 0.05))
    tid = await new_thread(client)
    run = await client.runs.create(tid, "lead_agent", input=user(key), stream_mode="messages-tuple")
    await wait_streaming(client, tid, run["run_id"])
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "running"
    final = await client.runs.join(tid, run["run_id"])
    lead = Lead.of(server, tid)
    assert final == lead.state(human(key), ai(slow_turn(10)["content"]), title=TITLE)


async def test_if_not_exists_create_makes_the_thread(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "made"})
    tid = str(uuid.uuid4())
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await client.runs.wait(tid, "lead_agent", input=user(key))
    assert caught.value.response.status_code == 404
    answer = await client.runs.wait(tid, "lead_agent", input=user(key), if_not_exists="create")
    assert answer == Lead.of(server, tid).state(human(key), ai_invoked("made"), title=TITLE)
    assert (await client.threads.get(tid))["status"] == "idle"


# -- stateless runs ----------------------------------------------------------------------


async def test_stateless_wait_deletes_its_thread(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "ephemeral"})
    created: list[str] = []
    answer = await client.runs.wait(
        None,
        "lead_agent",
        input=user(key),
        on_run_created=lambda meta: created.append(str(meta["thread_id"])),
    )
    (tid,) = created
    assert answer == Lead.of(server, tid).state(human(key), ai_invoked("ephemeral"), title=TITLE)
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_stateless_stream_deletes_its_thread(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "gone"})
    events = await collect(client.runs.stream(None, "lead_agent", input=user(key)))
    run_id, tid = events[0].data["run_id"], events[0].data["thread_id"]
    exchange = Expected(Lead.of(server, tid), run_id, key, ai_invoked("gone"))
    assert pairs(events) == [metadata_event(run_id, tid), *exchange.values(), end_event(run_id)]
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_stateless_create_keep_leaves_the_thread(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "kept"})
    run = await client.runs.create(None, "lead_agent", input=user(key), on_completion="keep")
    tid = run["thread_id"]
    final = await client.runs.join(tid, run["run_id"])
    assert final == Lead.of(server, tid).state(human(key), ai_invoked("kept"), title=TITLE)
    thread = await client.threads.get(tid)
    # the run stamps its graph and assistant on the thread, as the LangGraph server does
    stamp = {"graph_id": "lead_agent", "assistant_id": LEAD_AGENT_ID}
    assert (thread["status"], thread["metadata"]) == ("idle", {"stateless": True, **stamp})
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"


async def test_stateless_create_default_deletes_after_completion(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "bye"})
    run = await client.runs.create(None, "lead_agent", input=user(key), stream_mode="values")
    tid = run["thread_id"]
    events = await collect(client.runs.join_stream(tid, run["run_id"]))
    assert pairs(events)[-1] == end_event(run["run_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_on_completion_on_a_thread_run_is_422(client: LangGraphClient) -> None:
    tid = await new_thread(client)
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create(tid, "lead_agent", input=user("x"), on_completion="keep")
    assert "on_completion" in str(caught.value)


async def test_create_batch(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "batched"})
    tid = await new_thread(client)
    runs = await client.runs.create_batch(
        [
            {"assistant_id": "lead_agent", "input": user(f"{key} a"), "thread_id": tid},
            {"assistant_id": "lead_agent", "input": user(f"{key} b"), "on_completion": "keep"},  # type: ignore[typeddict-unknown-key]
        ]
    )
    assert [r["status"] for r in runs] == ["pending", "pending"]
    assert runs[0]["thread_id"] == tid
    for run in runs:
        await wait_status(client, run["thread_id"], run["run_id"], ("success",))
    assert (await client.threads.get_state(tid))["values"] == Lead.of(server, tid).state(
        human(f"{key} a"), ai_invoked("batched"), title=TITLE
    )


async def test_create_batch_validates_every_item_first(client: LangGraphClient, key: str) -> None:
    tid = await new_thread(client)
    with pytest.raises(UnprocessableEntityError) as caught:
        await client.runs.create_batch(
            [
                {"assistant_id": "lead_agent", "input": user(key), "thread_id": tid},
                {"assistant_id": "nope", "input": user(key)},
            ]
        )
    assert "[1]" in str(caught.value)
    assert await client.runs.list(tid) == []


async def test_run_from_a_past_checkpoint_branches_the_thread(
    mode_server: LiveServer, mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    """Time travel: a run given ``checkpoint_id`` continues from that checkpoint, so the
    later exchange is not in its history (it stays reachable in the thread's history)."""
    client, server = mode_client, mode_server
    script(stub, key, {"content": "first"}, {"content": "second"}, {"content": "branched"})
    tid = await new_thread(client)
    first = await client.runs.wait(tid, "lead_agent", input=user(key))
    after_first = (await client.threads.get_state(tid))["checkpoint"]["checkpoint_id"]
    await client.runs.wait(tid, "lead_agent", input=user("later"))

    branch = await client.runs.wait(
        tid, "lead_agent", input=user("instead"), checkpoint_id=after_first
    )
    lead = Lead.of(server, tid)
    # the branch's conversation has one answer before it: the script's second turn answers
    expected = lead.state(*first["messages"], human("instead"), ai_invoked("second"), title=TITLE)
    assert branch == expected
    assert (await client.threads.get_state(tid))["values"] == expected
    run = (await client.runs.list(tid, limit=1))[0]
    assert run["kwargs"]["checkpoint"] == {"checkpoint_id": after_first}

    via_checkpoint = await client.runs.wait(
        tid,
        "lead_agent",
        input=user("again instead"),
        checkpoint={"checkpoint_id": after_first, "checkpoint_ns": ""},
    )
    assert via_checkpoint["messages"][-2:] == [human("again instead"), ai_invoked("second")]
    assert via_checkpoint["messages"][:-2] == first["messages"]
