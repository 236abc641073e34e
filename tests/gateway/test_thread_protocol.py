"""The thread-stream protocol (``client.threads.stream`` of the JS SDK) on the wire: commands
answered as JSON, the thread's events as SSE, filtered by channel."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.runs.runs_helpers import ANY_INT, ANY_STR, ANY_UUID, pattern, script, sse_frames, user
from tests.support.live import LiveServer
from tests.support.problems import problem

ASK = {
    "tool_calls": [
        {
            "name": "ask_clarification",
            "args": {"question": "Which colour?", "clarification_type": "missing_info"},
            "id": "call_ask",
        }
    ]
}
TERMINAL = {"completed", "failed", "interrupted"}


async def _command(http: httpx.AsyncClient, tid: str, method: str, **params: Any) -> Any:
    response = await http.post(
        f"/threads/{tid}/commands", json={"id": 7, "method": method, "params": params}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _events(
    http: httpx.AsyncClient, tid: str, channels: list[str], runs: int = 1
) -> list[dict[str, Any]]:
    """The thread's events until ``runs`` runs have ended."""
    events: list[dict[str, Any]] = []
    body = {"channels": channels}
    async with http.stream("POST", f"/threads/{tid}/stream/events", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        async for frame in sse_frames(response):
            if frame.comment:
                continue
            event = frame.data
            assert (frame.event, frame.field("id")) == (event["method"], event["event_id"])
            events.append(event)
            data = event["params"]["data"]
            if event["method"] == "lifecycle" and data["event"] in TERMINAL:
                runs -= 1
                if runs == 0:
                    return events
    raise AssertionError("the stream ended before the run")


async def _until_interrupted(http: httpx.AsyncClient, tid: str) -> None:
    for _ in range(600):  # a short, bounded poll
        if (await http.get(f"/threads/{tid}")).json()["status"] == "interrupted":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"thread {tid} never paused")


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(e["method"], e["params"]["data"].get("event")) for e in events]


async def test_a_run_streams_lifecycle_and_messages_as_content_blocks(
    server: LiveServer, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "hello there friend"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        reader = asyncio.create_task(_events(http, tid, ["lifecycle", "messages"]))
        await asyncio.sleep(0.5)  # the stream is open before the run starts
        started = await _command(http, tid, "run.start", assistant_id="lead_agent", input=user(key))
        events = await asyncio.wait_for(reader, 60)
        state = await _command(http, tid, "state.get", namespace=[])
        tree = await _command(http, tid, "agent.getTree")
    assert started == {"type": "success", "id": 7, "result": {"run_id": ANY_UUID}}
    run_id = started["result"]["run_id"]
    words = ["hello ", "there ", "friend"]
    assert _summary(events) == [
        ("lifecycle", "running"),
        ("messages", "message-start"),
        ("messages", "content-block-start"),
        *[("messages", "content-block-delta")] * len(words),
        ("messages", "content-block-finish"),
        ("messages", "message-finish"),
        ("lifecycle", "completed"),
    ]
    data = [e["params"]["data"] for e in events]
    assert data[1] == {
        "event": "message-start",
        "role": "ai",
        "id": pattern(r"lc_run--[0-9a-f-]+"),
        "metadata": {
            "provider": "openai",
            "model": "stub-model",
            "model_type": "chat",
            "run_id": run_id,
            "thread_id": tid,
        },
    }
    assert data[2] == {
        "event": "content-block-start",
        "index": 0,
        "content": {"type": "text", "text": ""},
    }
    assert [d["delta"] for d in data[3:6]] == [{"type": "text-delta", "text": w} for w in words]
    assert data[6] == {
        "event": "content-block-finish",
        "index": 0,
        "content": {"type": "text", "text": "hello there friend"},
    }
    assert data[7] == {
        "event": "message-finish",
        "usage": {
            "input_tokens": ANY_INT,
            "output_tokens": ANY_INT,
            "total_tokens": ANY_INT,
            "input_token_details": {},
            "output_token_details": {},
        },
    }
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))
    assert all(e["params"]["namespace"] == [] for e in events)
    assert all(e["event_id"].startswith(f"{run_id}:") for e in events)
    assert state["result"]["values"]["messages"][-1]["content"] == "hello there friend"
    assert state["result"]["checkpoint"] == {"id": ANY_STR, "ns": ""}
    assert tree["result"] == {
        "tree": {"namespace": [], "status": "completed", "graph_name": "lead_agent"}
    }


async def test_an_interrupt_is_requested_and_answered_by_id(
    server: LiveServer, stub: Any, key: str
) -> None:
    script(stub, key, ASK, {"content": "Blue it is"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        reader = asyncio.create_task(_events(http, tid, ["lifecycle", "input", "tools"], runs=2))
        await asyncio.sleep(0.5)
        await _command(http, tid, "run.start", assistant_id="lead_agent", input=user(key))
        await _until_interrupted(http, tid)
        state = (await http.get(f"/threads/{tid}/state")).json()
        interrupt_id = state["interrupts"][0]["id"]
        wrong = await _command(
            http, tid, "input.respond", namespace=[], interrupt_id="nope", response="x"
        )
        answered = await _command(
            http, tid, "input.respond", namespace=[], interrupt_id=interrupt_id, response="Blue"
        )
        events = await asyncio.wait_for(reader, 60)
        final = (await http.get(f"/threads/{tid}/state")).json()
    assert [(e["method"], e["params"]["data"]) for e in events] == [
        ("lifecycle", {"event": "running", "graph_name": "lead_agent"}),
        (
            "tools",
            {
                "event": "tool-started",
                "tool_call_id": "call_ask",
                "tool_name": "ask_clarification",
                "input": {"question": "Which colour?", "clarification_type": "missing_info"},
            },
        ),
        # the question, as the call's result; then the pause before the next model call
        (
            "tools",
            {"event": "tool-finished", "tool_call_id": "call_ask", "output": "❓ Which colour?"},
        ),
        (
            "input.requested",
            {
                "interrupt_id": interrupt_id,
                "payload": {
                    "type": "clarification",
                    "question": "Which colour?",
                    "clarification_type": "missing_info",
                    "context": None,
                    "options": None,
                },
            },
        ),
        ("lifecycle", {"event": "interrupted", "graph_name": "lead_agent"}),
        ("lifecycle", {"event": "running", "graph_name": "lead_agent"}),
        ("lifecycle", {"event": "completed", "graph_name": "lead_agent"}),
    ]
    assert wrong == {
        "type": "error",
        "id": 7,
        "error": "no_such_interrupt",
        "message": "no pending interrupt 'nope'",
    }
    assert answered == {"type": "success", "id": 7, "result": {}}
    assert [(m["type"], m["content"]) for m in final["values"]["messages"][-2:]] == [
        ("human", "Blue"),
        ("ai", "Blue it is"),
    ]


async def test_commands_fawn_does_not_have_and_bad_requests(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        inject = await _command(
            http, tid, "input.inject", namespace=[], message={"role": "user", "content": "x"}
        )
        subscribe = await _command(http, tid, "subscription.subscribe", channels=["values"])
        unknown = await _command(http, tid, "run.stop")
        namespace = await _command(http, tid, "state.get", namespace=["child"])
        bad_channel = await http.post(f"/threads/{tid}/stream/events", json={"channels": ["x"]})
        missing = await http.post(
            "/threads/00000000-0000-0000-0000-000000000000/stream/events",
            json={"channels": ["values"]},
        )
    assert [(r["error"], r["type"]) for r in (inject, subscribe, unknown, namespace)] == [
        ("not_supported", "error"),
        ("not_supported", "error"),
        ("unknown_command", "error"),
        ("no_such_namespace", "error"),
    ]
    assert unknown["message"] == "unknown command 'run.stop'"
    assert bad_channel.status_code == 422
    assert bad_channel.json() == problem(
        "channels[0]: unknown channel 'x': one of values, updates, messages, tools, "
        "lifecycle, input, checkpoints, tasks, custom, or custom:<name>",
        "invalid_input",
    )
    assert missing.status_code == 404
