"""The runs API on the wire (raw HTTP): status codes, headers, SSE bytes, refusals."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import (
    ANY_UUID,
    Expected,
    Lead,
    ai_invoked,
    containing,
    end_event,
    metadata_event,
    new_thread,
    script,
    sse_frames,
    user,
)
from tests.support.live import LiveServer
from tests.support.problems import problem

LEAD_AGENT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lead_agent"))
REPLY = "hello there friend"


@pytest.mark.parametrize("mode", ["event", "nonsense"])
async def test_unsupported_stream_mode_is_422_listing_supported(
    server: LiveServer, mode: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        response = await http.post(
            f"/threads/{tid}/runs/stream",
            json={
                "assistant_id": "lead_agent",
                "input": user("x"),
                "stream_mode": ["values", mode],
            },
        )
        runs = await http.get(f"/threads/{tid}/runs")
    assert response.status_code == 422
    assert response.json() == problem(
        f"unsupported stream_mode {mode}; supported: values, updates, messages, "
        "messages-tuple, custom, debug, tasks, checkpoints, events",
        "invalid_input",
    )
    assert runs.json() == []


async def test_sse_wire_format(server: LiveServer, stub: Any, key: str) -> None:
    """Headers and bytes exactly as the LangGraph server writes them (``custom`` mode keeps
    the body to the two frames every run has)."""
    script(stub, key, {"content": REPLY})
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(key), "stream_mode": "custom"}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            raw = b"".join([chunk async for chunk in response.aiter_bytes()])
    run_id = response.headers["content-location"].rsplit("/", 1)[1]
    assert response.status_code == 200
    assert run_id == ANY_UUID
    assert {k: v for k, v in response.headers.items() if k not in ("date", "server")} == {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
        "location": f"/threads/{tid}/runs/{run_id}/stream",
        "content-location": f"/threads/{tid}/runs/{run_id}",
        "transfer-encoding": "chunked",
    }
    assert raw.decode() == (
        "event: metadata\n"
        f'data: {{"run_id":"{run_id}","thread_id":"{tid}","attempt":1}}\n'
        "id: 1\n\n"
        "event: end\n"
        f'data: {{"run_id":"{run_id}","status":"success"}}\n'
        "id: 2\n\n"
    )


async def test_sse_frames_carry_event_data_and_id(server: LiveServer, stub: Any, key: str) -> None:
    script(stub, key, {"content": REPLY})
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(f"{key} hi"), "stream_mode": "updates"}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            frames = [f async for f in sse_frames(response)]
    run_id = frames[0].data["run_id"]
    expected = [
        metadata_event(run_id, tid),
        *Expected(Lead.of(server, tid), run_id, f"{key} hi", ai_invoked(REPLY)).updates(),
        end_event(run_id),
    ]
    assert [f.lines[0].split(": ")[0] for f in frames] == ["event"] * len(expected)
    assert [(f.event, f.data, f.field("id")) for f in frames] == [
        (event, data, str(i)) for i, (event, data) in enumerate(expected, start=1)
    ]


async def test_create_response_headers(server: LiveServer, stub: Any, key: str) -> None:
    script(stub, key, {"content": "x"})
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        created = await http.post(
            f"/threads/{tid}/runs", json={"assistant_id": LEAD_AGENT_ID, "input": user(key)}
        )
        run_id = created.json()["run_id"]
        waited = await http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user(key)}
        )
    assert created.status_code == 200
    assert created.headers["content-location"] == f"/threads/{tid}/runs/{run_id}"
    assert waited.status_code == 200
    wait_run = waited.headers["content-location"].rsplit("/", 1)[1]
    assert waited.headers["location"] == f"/threads/{tid}/runs/{wait_run}/join"


@pytest.mark.parametrize(
    ("extra", "detail"),
    [
        ({"context": {"subagent_enabled": "yes"}}, "subagent_enabled must be of type bool"),
        (
            {"context": {"max_concurrent_subagents": 5}},
            "max_concurrent_subagents must be between 1 and 4",
        ),
        ({"context": {"max_concurrent_subagents": 0}}, containing("between 1 and 4")),
        ({"webhook": "http://example.invalid/hook"}, "webhook: webhooks are not supported"),
        ({"after_seconds": 5}, "after_seconds: delayed runs (after_seconds) are not supported"),
        ({"feedback_keys": ["x"]}, "feedback_keys: LangSmith feedback keys are not supported"),
        ({"context": {"thinking_enabled": "yes"}}, "thinking_enabled must be of type bool"),
        ({"context": {"reasoning_effort": "max"}}, containing("reasoning_effort must be one of")),
        ({"context": {"agent_name": "other"}}, containing("unknown agent_name 'other'")),
        ({"context": {"max_concurrent_subagents": 99}}, containing("max_concurrent_subagents")),
        ({"context": {"colour": "red"}}, containing("context: unknown key(s) colour")),
        ({"command": {"resume": 1}, "input": user("x")}, "give either input or command, not both"),
        ({"bogus": 1}, "bogus: unsupported field"),
        ({"stream_mode": "event"}, containing("unsupported stream_mode event; supported: ")),
        ({"multitask_strategy": "sometimes"}, containing("multitask_strategy: ")),
    ],
)
async def test_options_we_do_not_implement_are_422_naming_the_field(
    server: LiveServer, extra: dict[str, Any], detail: Any
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user("x"), **extra}
        responses = [
            await http.post(path, json=body)
            for path in (f"/threads/{tid}/runs", f"/threads/{tid}/runs/stream", "/runs/wait")
        ]
        runs = await http.get(f"/threads/{tid}/runs")
    assert [(r.status_code, r.json()) for r in responses] == [
        (422, problem(detail, "invalid_input"))
    ] * 3
    assert runs.json() == []


async def test_stateless_runs_cannot_start_from_a_checkpoint(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(
            "/runs", json={"assistant_id": "lead_agent", "input": user("x"), "checkpoint_id": "c"}
        )
    assert (response.status_code, response.json()) == (
        422,
        problem("checkpoint_id: stateless runs cannot start from a checkpoint", "invalid_input"),
    )


async def test_bad_last_event_id_is_400(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "ok"})
    tid = await new_thread(client)
    run = await client.runs.create(tid, "lead_agent", input=user(key))
    await client.runs.join(tid, run["run_id"])
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get(
            f"/threads/{tid}/runs/{run['run_id']}/stream", headers={"Last-Event-ID": "abc"}
        )
    assert (response.status_code, response.json()) == (
        400,
        problem(
            "Last-Event-ID must be a non-negative integer event id (or -1: all), got 'abc'",
            "invalid_cursor",
        ),
    )
