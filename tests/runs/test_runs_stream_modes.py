"""The complete event sequence of every stream mode, through the SDK and on the wire."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import (
    ANY_ISO,
    ANY_UUID,
    USAGE,
    Event,
    ai,
    ai_invoked,
    assert_ids_increasing,
    collect,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    sse_frames,
    state,
    superset,
    user,
)
from tests.support.live import LiveServer

REPLY = "hello there friend"
WORDS = ["hello ", "there ", "friend"]


async def _stream(
    client: LangGraphClient, stub: Any, key: str, modes: list[str], **kwargs: Any
) -> tuple[str, str, list[Event]]:
    stub.add_script(key, [{"content": REPLY}])
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(f"{key} hi"), stream_mode=modes, **kwargs)
    )
    assert_ids_increasing(events)
    assert events[0].id == "1"
    run_id = events[0].data["run_id"]
    return tid, run_id, events


def _chunk(
    content: str,
    msg_id: Any,
    *,
    response_metadata: dict[str, Any] | None = None,
    usage: Any = None,
    position: str | None = None,
    kind: str = "AIMessageChunk",
) -> dict[str, Any]:
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {"model_provider": "openai"}
        if response_metadata is None
        else response_metadata,
        "type": kind,
        "name": None,
        "id": msg_id,
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": usage,
        "tool_call_chunks": [],
        "chunk_position": position,
    }


_FINISHED = {"finish_reason": "stop", "model_name": "stub-model", "model_provider": "openai"}


def _stream_chunks(msg_id: Any) -> list[dict[str, Any]]:
    """The chunks ChatOpenAI yields for REPLY: an opener, the words, finish, usage, last."""
    return [
        _chunk("", msg_id),
        *(_chunk(w, msg_id) for w in WORDS),
        _chunk("", msg_id, response_metadata=_FINISHED),
        _chunk("", msg_id, response_metadata={}, usage=USAGE),
        _chunk("", msg_id, response_metadata={}, position="last"),
    ]


def _chat_metadata(run_id: str, tid: str) -> Any:
    return superset(
        {
            "run_id": run_id,
            "thread_id": tid,
            "langgraph_node": "model",
            "langgraph_step": 1,
            "langgraph_triggers": ["branch:to:model"],
            "ls_provider": "openai",
            "ls_model_name": "stub-model",
            "ls_model_type": "chat",
        }
    )


async def test_values_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["values"])
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("values", state(human(f"{key} hi"))),
        ("values", state(human(f"{key} hi"), ai_invoked(REPLY))),
        end_event(run_id),
    ]
    assert (await client.threads.get_state(tid))["values"] == events[2].data


async def test_updates_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["updates"])
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("updates", {"model": {"messages": [ai_invoked(REPLY)]}}),
        end_event(run_id),
    ]


async def test_messages_tuple_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["messages-tuple"])
    msg_id = events[1].data[0]["id"]
    meta = _chat_metadata(run_id, tid)
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *(("messages", [chunk, meta]) for chunk in _stream_chunks(msg_id)),
        end_event(run_id),
    ]
    stored = (await client.threads.get_state(tid))["values"]["messages"][-1]
    assert stored == ai(REPLY, msg_id)


async def test_messages_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    """``messages``: ``messages/metadata`` once per message, then the whole message so far."""
    tid, run_id, events = await _stream(client, stub, key, ["messages"])
    msg_id = events[1].data and next(iter(events[1].data))

    def partial(content: str, **kw: Any) -> tuple[str, Any]:
        return ("messages/partial", [_chunk(content, msg_id, kind="ai", **kw)])

    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("messages/metadata", {msg_id: {"metadata": _chat_metadata(run_id, tid)}}),
        partial(""),
        partial("hello "),
        partial("hello there "),
        partial(REPLY),
        partial(REPLY, response_metadata=_FINISHED),
        partial(REPLY, response_metadata=_FINISHED, usage=USAGE),
        partial(REPLY, response_metadata=_FINISHED, usage=USAGE, position="last"),
        end_event(run_id),
    ]


async def test_custom_mode_without_writers(client: LangGraphClient, stub: Any, key: str) -> None:
    """Nothing in the tool-less lead agent writes custom data: the stream is empty between
    metadata and end (a tool that calls ``get_stream_writer`` is needed for more)."""
    tid, run_id, events = await _stream(client, stub, key, ["custom"])
    assert pairs(events) == [metadata_event(run_id, tid), end_event(run_id)]


def _config(tid: str, run_id: str) -> dict[str, Any]:
    return {
        "configurable": {
            "checkpoint_ns": "",
            "thread_id": tid,
            "run_id": run_id,
            "checkpoint_id": ANY_UUID,
        }
    }


def _snapshot(
    tid: str, run_id: str, *, values: Any, step: int, nxt: list[str], parent: bool
) -> dict[str, Any]:
    tasks = [
        {"id": ANY_UUID, "name": name, "interrupts": [], "state": None} for name in nxt
    ]
    return {
        "config": _config(tid, run_id),
        "parent_config": _config(tid, run_id) if parent else None,
        "values": values,
        "metadata": {"source": "input" if step < 0 else "loop", "step": step, "parents": {}},
        "next": nxt,
        "tasks": tasks,
    }


def _task_start(run_id: str, values: Any) -> dict[str, Any]:
    return {
        "id": ANY_UUID,
        "name": "model",
        "input": values,
        "triggers": ["branch:to:model"],
        "metadata": {
            "ls_integration": "langchain_create_agent",
            "lc_agent_name": "lead_agent",
            "run_id": run_id,
        },
    }


def _task_result(reply: Any) -> dict[str, Any]:
    return {
        "id": ANY_UUID,
        "name": "model",
        "error": None,
        "result": {"messages": [reply]},
        "interrupts": [],
    }


async def test_checkpoints_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["checkpoints"])
    asked = state(human(f"{key} hi"))
    answered = state(human(f"{key} hi"), ai_invoked(REPLY))
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("checkpoints", _snapshot(tid, run_id, values=state(), step=-1, nxt=["__start__"], parent=False)),
        ("checkpoints", _snapshot(tid, run_id, values=asked, step=0, nxt=["model"], parent=True)),
        ("checkpoints", _snapshot(tid, run_id, values=answered, step=1, nxt=[], parent=True)),
        end_event(run_id),
    ]
    chain = [e.data for e in events[1:4]]
    for parent, child in zip(chain, chain[1:], strict=False):
        assert child["parent_config"] == parent["config"]
    latest = await client.threads.get_state(tid)
    assert latest["checkpoint"]["checkpoint_id"] == chain[-1]["config"]["configurable"]["checkpoint_id"]


async def test_tasks_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["tasks"])
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("tasks", _task_start(run_id, state(human(f"{key} hi")))),
        ("tasks", _task_result(ai_invoked(REPLY))),
        end_event(run_id),
    ]
    assert events[1].data["id"] == events[2].data["id"]


async def test_debug_mode(client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["debug"])
    asked = state(human(f"{key} hi"))
    answered = state(human(f"{key} hi"), ai_invoked(REPLY))

    def debug(step: int, kind: str, payload: Any) -> tuple[str, Any]:
        return ("debug", {"step": step, "timestamp": ANY_ISO, "type": kind, "payload": payload})

    assert pairs(events) == [
        metadata_event(run_id, tid),
        debug(-1, "checkpoint", _snapshot(tid, run_id, values=state(), step=-1, nxt=["__start__"], parent=False)),
        debug(0, "checkpoint", _snapshot(tid, run_id, values=asked, step=0, nxt=["model"], parent=True)),
        debug(1, "task", _task_start(run_id, asked)),
        debug(1, "task_result", _task_result(ai_invoked(REPLY))),
        debug(1, "checkpoint", _snapshot(tid, run_id, values=answered, step=1, nxt=[], parent=True)),
        end_event(run_id),
    ]


async def test_several_modes_interleave_in_execution_order(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    tid, run_id, events = await _stream(
        client, stub, key, ["values", "messages-tuple", "updates"]
    )
    msg_id = events[2].data[0]["id"]
    meta = _chat_metadata(run_id, tid)
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("values", state(human(f"{key} hi"))),
        *(("messages", [chunk, meta]) for chunk in _stream_chunks(msg_id)),
        ("updates", {"model": {"messages": [ai(REPLY, msg_id)]}}),
        ("values", state(human(f"{key} hi"), ai(REPLY, msg_id))),
        end_event(run_id),
    ]
    run = await client.runs.get(tid, run_id)
    assert run["kwargs"]["stream_mode"] == ["values", "messages-tuple", "updates"]


async def test_subgraphs_flag_keeps_root_event_names(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    """Events of the root graph carry no namespace (``mode|ns`` is for subgraph events;
    the lead agent has no subgraph yet, so only the flag and the root naming are checked)."""
    tid, run_id, events = await _stream(client, stub, key, ["updates"], stream_subgraphs=True)
    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("updates", {"model": {"messages": [ai_invoked(REPLY)]}}),
        end_event(run_id),
    ]
    assert (await client.runs.get(tid, run_id))["kwargs"]["subgraphs"] is True


@pytest.mark.parametrize("mode", ["events", "nonsense"])
async def test_unsupported_stream_mode_is_422_listing_supported(
    server: LiveServer, mode: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        response = await http.post(
            f"/threads/{tid}/runs/stream",
            json={"assistant_id": "lead_agent", "input": user("x"), "stream_mode": ["values", mode]},
        )
        runs = await http.get(f"/threads/{tid}/runs")
    assert response.status_code == 422
    assert response.json() == {
        "detail": f"unsupported stream_mode {mode}; supported: values, updates, messages, "
        "messages-tuple, custom, debug, tasks, checkpoints"
    }
    assert runs.json() == []


async def test_sse_wire_format(server: LiveServer, stub: Any, key: str) -> None:
    """Headers and frames exactly as the LangGraph server writes them."""
    stub.add_script(key, [{"content": REPLY}])
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(key), "stream_mode": ["updates"]}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            raw = b"".join([chunk async for chunk in response.aiter_bytes()])
            headers = response.headers
    frames = raw.decode().split("\n\n")
    assert frames[-1] == ""
    parsed = [f.split("\n") for f in frames[:-1]]
    run_id = headers["content-location"].rsplit("/", 1)[1]
    assert response.status_code == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-store"
    assert headers["x-accel-buffering"] == "no"
    assert headers["location"] == f"/threads/{tid}/runs/{run_id}/stream"
    assert headers["content-location"] == f"/threads/{tid}/runs/{run_id}"
    assert [[line.split(": ", 1)[0] for line in f] for f in parsed] == [
        ["event", "data", "id"]
    ] * 3
    assert [(f[0], f[2]) for f in parsed] == [
        ("event: metadata", "id: 1"),
        ("event: updates", "id: 2"),
        ("event: end", "id: 3"),
    ]
    assert parsed[0][1] == (
        f'data: {{"run_id":"{run_id}","thread_id":"{tid}","attempt":1}}'
    )
    assert parsed[2][1] == f'data: {{"run_id":"{run_id}","status":"success"}}'
    assert parsed[1][1].startswith('data: {"model":{"messages":[{')


async def test_sse_frames_parse_as_events(server: LiveServer, stub: Any, key: str) -> None:
    stub.add_script(key, [{"content": REPLY}])
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(key), "stream_mode": "values"}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            frames = [f async for f in sse_frames(response)]
    assert [(f.event, f.field("id")) for f in frames] == [
        ("metadata", "1"),
        ("values", "2"),
        ("values", "3"),
        ("end", "4"),
    ]
    assert frames[2].data == state(human(key), ai_invoked(REPLY))
