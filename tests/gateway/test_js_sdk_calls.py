"""What the JS SDK (``@langchain/langgraph-sdk``) sends that the Python one does not: its
request shapes, replayed here over HTTP so each is pinned on both backends (the whole JS
sweep runs in ``tests/js``)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import (
    ANY_ISO,
    ANY_STR,
    ANY_UUID,
    TITLE,
    Lead,
    ai,
    collect,
    end_event,
    human,
    metadata_event,
    new_thread,
    pairs,
    script,
    sse_frames,
    user,
)
from tests.support.live import LiveServer
from tests.support.problems import problem

LEAD_AGENT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lead_agent"))
STAMP = {"graph_id": "lead_agent", "assistant_id": LEAD_AGENT_ID}


async def _finished_run(client: LangGraphClient, stub: Any, key: str, reply: str) -> str:
    script(stub, key, {"content": reply})
    tid = await new_thread(client)
    await client.runs.wait(tid, "lead_agent", input=user(key))
    return tid


async def test_last_event_id_minus_one_replays_the_whole_run(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """``useStream`` rejoins a run after a reload with ``Last-Event-ID: -1``."""
    script(stub, key, {"content": "one two three"})
    tid = await new_thread(client)
    everything = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode="messages-tuple")
    )
    run_id = everything[0].data["run_id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        path = f"/threads/{tid}/runs/{run_id}/stream"
        async with http.stream("GET", path, headers={"Last-Event-ID": "-1"}) as response:
            frames = [f async for f in sse_frames(response)]
        async with http.stream("GET", f"/threads/{tid}/stream", headers={"Last-Event-ID": "-1"}):
            pass  # the thread stream takes it too (it would wait for runs: just opened)
        refused = await http.get(path, headers={"Last-Event-ID": "-2"})
    assert response.status_code == 200
    assert [(f.event, f.data, f.field("id")) for f in frames] == [
        (e.event, e.data, e.id) for e in everything
    ]
    assert refused.status_code == 400
    assert refused.json() == problem(
        "Last-Event-ID must be a non-negative integer event id (or -1: all), got '-2'",
        "invalid_cursor",
    )


async def test_a_run_writes_graph_and_assistant_into_the_threads_metadata(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """Agent Chat UI lists its history by ``graph_id`` (or ``assistant_id``)."""
    script(stub, key, {"content": "a"}, {"content": "b"})
    mine = await client.threads.create(metadata={"topic": key})
    await client.runs.wait(mine["thread_id"], LEAD_AGENT_ID, input=user(key))
    thread = await client.threads.get(mine["thread_id"])
    assert thread["metadata"] == {"topic": key, **STAMP}
    found = await client.threads.search(metadata={"graph_id": "lead_agent", "topic": key})
    assert [t["thread_id"] for t in found] == [mine["thread_id"]]
    by_id = await client.threads.search(metadata={"assistant_id": LEAD_AGENT_ID, "topic": key})
    assert [t["thread_id"] for t in by_id] == [mine["thread_id"]]


async def test_batch_items_with_assistant_id_twice(server: LiveServer, key: str) -> None:
    """``runs.createBatch`` sends ``assistantId`` beside ``assistant_id``."""
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        same = {"assistant_id": "lead_agent", "assistantId": LEAD_AGENT_ID, "thread_id": tid}
        other = {"assistant_id": "lead_agent", "assistantId": "other", "thread_id": tid}
        refused = await http.post("/runs/batch", json=[{**other, "input": user(key)}])
        before = (await http.get(f"/threads/{tid}/runs")).json()
        accepted = await http.post("/runs/batch", json=[{**same, "input": user(key)}])
    assert refused.status_code == 422
    assert refused.json() == problem(
        "[0]: assistantId ('other') and assistant_id ('lead_agent') name different assistants",
        "invalid_input",
    )
    assert before == []
    assert accepted.status_code == 200
    assert [(r["thread_id"], r["assistant_id"]) for r in accepted.json()] == [(tid, LEAD_AGENT_ID)]


async def test_history_before_a_config(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """The JS SDK's ``getHistory({before})`` takes its ``Config`` type."""
    tid = await _finished_run(client, stub, key, "done")
    states = await client.threads.get_history(tid, limit=100)
    middle = states[2]["checkpoint"]["checkpoint_id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.post(
            f"/threads/{tid}/history",
            json={"limit": 100, "before": {"configurable": {"checkpoint_id": middle}}},
        )
    assert response.status_code == 200
    assert response.json() == states[3:]


async def test_supersteps_as_input(server: LiveServer, client: LangGraphClient) -> None:
    """``threads.create({supersteps})`` with ``asNode: "__input__"`` (LangGraph's bulk
    update): the values are written as the graph's input, which its start node takes next."""
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        response = await http.post(
            "/threads",
            json={
                "metadata": {"graph_id": "lead_agent"},
                "supersteps": [{"updates": [{"values": user("hi"), "as_node": "__input__"}]}],
            },
        )
    assert response.status_code == 200
    tid = response.json()["thread_id"]
    state = await client.threads.get_state(tid)
    assert (state["values"], state["next"], state["metadata"]["source"]) == (
        {"messages": [], "artifacts": [], "viewed_images": {}},
        ["__start__"],
        "input",
    )


async def test_patch_state_merges_checkpoint_metadata(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    tid = await _finished_run(client, stub, key, "patched")
    before = await client.threads.get_state(tid)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        patched = await http.patch(f"/threads/{tid}/state", json={"metadata": {"label": key}})
        owned = await http.patch(f"/threads/{tid}/state", json={"metadata": {"step": 0}})
        empty = (await http.post("/threads", json={})).json()["thread_id"]
        nothing = await http.patch(f"/threads/{empty}/state", json={"metadata": {"a": 1}})
        missing = await http.patch(f"/threads/{uuid.uuid4()}/state", json={"metadata": {}})
    assert (patched.status_code, patched.content) == (204, b"")
    after = await client.threads.get_state(tid)
    assert after == {**before, "metadata": {**before["metadata"], "label": key}}
    history = await client.threads.get_history(tid, limit=100)
    assert len(history) == len(await client.threads.get_history(tid, limit=100))
    assert history[0]["metadata"]["label"] == key
    assert "label" not in history[1]["metadata"]
    assert owned.status_code == 422
    assert owned.json() == problem(
        "metadata.step is written by LangGraph, not by a client", "invalid_input"
    )
    assert nothing.status_code == 404
    assert nothing.json() == problem(f"thread {empty} has no state to patch yet", "not_found")
    assert missing.status_code == 404


async def test_events_stream_mode(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    """``events``: LangChain's ``astream_events`` v2, beside the other modes asked for."""
    script(stub, key, {"content": "hello there friend"})
    tid = await new_thread(client)
    events = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode=["events", "values"])
    )
    run_id = events[0].data["run_id"]
    assert pairs(events)[0] == metadata_event(run_id, tid)
    assert pairs(events)[-1] == end_event(run_id)
    callbacks = [e.data for e in events if e.event == "events"]
    values = [e.data for e in events if e.event == "values"]
    assert {e.event for e in events} == {"metadata", "events", "values", "end"}
    # a model call under astream_events streams (its callbacks want the tokens)
    final = Lead.of(server, tid).state(human(key), ai("hello there friend"), title=TITLE)
    assert values[-1] == final
    for event in callbacks:
        assert set(event) >= {"event", "name", "run_id", "parent_ids", "tags", "metadata", "data"}
        assert (event["run_id"], event["metadata"]["thread_id"]) == (ANY_UUID, tid)
    root = [e for e in callbacks if e["parent_ids"] == []]
    assert [(e["event"], e["name"]) for e in root] == [
        ("on_chain_start", "lead_agent"),
        ("on_chain_end", "lead_agent"),
    ]
    assert root[-1]["data"]["output"] == final
    model = [
        e
        for e in callbacks
        if e["event"].startswith("on_chat_model") and e["metadata"]["langgraph_node"] == "model"
    ]
    kinds = [e["event"] for e in model]
    assert (kinds[0], kinds[-1], set(kinds[1:-1])) == (
        "on_chat_model_start",
        "on_chat_model_end",
        {"on_chat_model_stream"},
    )
    tokens = "".join(e["data"]["chunk"]["content"] for e in model[1:-1])
    assert tokens == "hello there friend"
    assert model[-1]["data"]["output"]["content"] == "hello there friend"
    assert model[0]["metadata"]["langgraph_node"] == "model"
    run = await client.runs.get(tid, run_id)
    assert (run["status"], run["kwargs"]["stream_mode"], run["created_at"]) == (
        "success",
        ["events", "values"],
        ANY_ISO,
    )
    assert isinstance(model[0]["name"], str) and model[0]["name"] == ANY_STR
