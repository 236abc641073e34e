"""The complete event sequence of every stream mode, through the SDK and on the wire."""

from __future__ import annotations

from typing import Any

from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import (
    TITLE,
    USAGE,
    Event,
    Expected,
    Lead,
    ai,
    ai_invoked,
    assert_ids_increasing,
    collect,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    script,
    superset,
    user,
)
from tests.support.live import LiveServer

REPLY = "hello there friend"
WORDS = ["hello ", "there ", "friend"]


async def _stream(
    client: LangGraphClient, stub: Any, key: str, modes: list[str], **kwargs: Any
) -> tuple[str, str, list[Event]]:
    script(stub, key, {"content": REPLY})
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(f"{key} hi"), stream_mode=modes, **kwargs)
    )
    assert_ids_increasing(events)
    assert events[0].id == "1"
    run_id = events[0].data["run_id"]
    return tid, run_id, events


def _expected(server: LiveServer, tid: str, run_id: str, key: str, reply: Any) -> Expected:
    return Expected(Lead.of(server, tid), run_id, f"{key} hi", reply)


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


def _chat_metadata(run_id: str, tid: str, step: int) -> Any:
    return superset(
        {
            "run_id": run_id,
            "thread_id": tid,
            "langgraph_node": "model",
            "langgraph_step": step,
            "langgraph_triggers": ["branch:to:model"],
            "ls_provider": "openai",
            "ls_model_name": "stub-model",
            "ls_model_type": "chat",
        }
    )


async def test_values_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["values"])
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *expected.values(),
        end_event(run_id),
    ]
    final = expected.lead.state(human(f"{key} hi"), ai_invoked(REPLY), title=TITLE)
    assert events[-2].data == final
    assert (await client.threads.get_state(tid))["values"] == events[-2].data


async def test_updates_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["updates"])
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [metadata_event(run_id, tid), *expected.updates(), end_event(run_id)]


async def test_messages_tuple_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """Only the lead model's tokens stream; the title model's call is not a message event."""
    tid, run_id, events = await _stream(client, stub, key, ["messages-tuple"])
    msg_id = events[1].data[0]["id"]
    step = _expected(server, tid, run_id, key, ai(REPLY)).model_step
    meta = _chat_metadata(run_id, tid, step)
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *(("messages", [chunk, meta]) for chunk in _stream_chunks(msg_id)),
        end_event(run_id),
    ]
    stored = (await client.threads.get_state(tid))["values"]["messages"][-1]
    assert stored == ai(REPLY, msg_id)


async def test_messages_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """``messages``: ``messages/metadata`` once per message, then the whole message so far."""
    tid, run_id, events = await _stream(client, stub, key, ["messages"])
    msg_id = next(iter(events[1].data))
    step = _expected(server, tid, run_id, key, ai(REPLY)).model_step

    def partial(content: str, **kw: Any) -> tuple[str, Any]:
        return ("messages/partial", [_chunk(content, msg_id, kind="ai", **kw)])

    assert pairs(events) == [
        metadata_event(run_id, tid),
        ("messages/metadata", {msg_id: {"metadata": _chat_metadata(run_id, tid, step)}}),
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
    """Nothing in a plain exchange writes custom data: the stream is empty between metadata
    and end (a tool that calls ``get_stream_writer`` is needed for more)."""
    tid, run_id, events = await _stream(client, stub, key, ["custom"])
    assert pairs(events) == [metadata_event(run_id, tid), end_event(run_id)]


async def test_checkpoints_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["checkpoints"])
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [
        metadata_event(run_id, tid),
        *expected.checkpoints(),
        end_event(run_id),
    ]
    chain = [e.data for e in events[1:-1]]
    for parent, child in zip(chain, chain[1:], strict=False):
        assert child["parent_config"] == parent["config"]
    latest = await client.threads.get_state(tid)
    last_id = chain[-1]["config"]["configurable"]["checkpoint_id"]
    assert latest["checkpoint"]["checkpoint_id"] == last_id


async def test_tasks_mode(server: LiveServer, client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["tasks"])
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [metadata_event(run_id, tid), *expected.tasks(), end_event(run_id)]
    ids = [e.data["id"] for e in events[1:-1]]
    assert ids[::2] == ids[1::2]
    assert len(set(ids)) == len(expected.steps)


async def test_debug_mode(server: LiveServer, client: LangGraphClient, stub: Any, key: str) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["debug"])
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [metadata_event(run_id, tid), *expected.debug(), end_event(run_id)]


async def test_several_modes_interleave_in_execution_order(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    tid, run_id, events = await _stream(client, stub, key, ["values", "messages-tuple", "updates"])
    msg_id = next(e.data[0]["id"] for e in events if e.event == "messages")
    expected = _expected(server, tid, run_id, key, ai(REPLY, msg_id))
    meta = _chat_metadata(run_id, tid, expected.model_step)
    states = expected.states()
    interleaved: list[tuple[str, Any]] = [("values", expected.start)]
    for i, (node, update) in enumerate(expected.steps):
        if node == "model":
            interleaved += [("messages", [chunk, meta]) for chunk in _stream_chunks(msg_id)]
        interleaved.append(("updates", {node: update}))
        if update:
            interleaved.append(("values", states[i + 1]))
    assert pairs(events) == [metadata_event(run_id, tid), *interleaved, end_event(run_id)]
    run = await client.runs.get(tid, run_id)
    assert run["kwargs"]["stream_mode"] == ["values", "messages-tuple", "updates"]


async def test_subgraphs_flag_keeps_root_event_names(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """Events of the root graph carry no namespace (``mode|ns`` is for subgraph events;
    the lead agent has no subgraph yet, so only the flag and the root naming are checked)."""
    tid, run_id, events = await _stream(client, stub, key, ["updates"], stream_subgraphs=True)
    expected = _expected(server, tid, run_id, key, ai_invoked(REPLY))
    assert pairs(events) == [metadata_event(run_id, tid), *expected.updates(), end_event(run_id)]
    assert (await client.runs.get(tid, run_id))["kwargs"]["subgraphs"] is True
