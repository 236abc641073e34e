"""Resumable streams: drop and rejoin without loss or duplicates, the gap, heartbeats."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.conftest import base_config
from tests.runs.runs_helpers import (
    Event,
    Expected,
    Frame,
    Lead,
    ai_invoked,
    assert_ids_increasing,
    collect,
    end_event,
    metadata_event,
    names,
    new_thread,
    pairs,
    script,
    slow_text,
    slow_turn,
    sse_frames,
    user,
)
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

GAP_HINT = "reload durable state (threads.get_state / runs.get) and rejoin from the latest id"
RETENTION = 5


def _tokens(events: list[Event]) -> str:
    return "".join(e.data[0]["content"] for e in events if e.event == "messages")


async def test_dropped_stream_rejoined_with_last_event_id_loses_and_repeats_nothing(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    stub.add_script(key, [slow_turn()])
    tid = await new_thread(client)
    live = client.runs.stream(
        tid,
        "lead_agent",
        input=user(key),
        stream_mode=["messages-tuple", "values"],
        stream_resumable=True,
    )
    first: list[Event] = []
    async for part in live:
        first.append(Event(part.event, part.data, part.id))
        if len(first) == 8:
            break
    await live.aclose()  # the client goes away mid-run
    run_id = first[0].data["run_id"]

    rest = await collect(client.runs.join_stream(tid, run_id, last_event_id=first[-1].id))
    replay = await collect(client.runs.join_stream(tid, run_id, last_event_id="0"))

    assert "messages" in names(rest), "the drop happened mid-run"
    assert first + rest == replay
    assert_ids_increasing(replay)
    assert replay[0].id == "1"
    assert pairs(replay)[-1] == end_event(run_id)
    assert _tokens(replay) == slow_text()
    assert (await client.runs.get(tid, run_id))["status"] == "success"


async def test_last_event_id_header_resumes_right_after_the_cursor(
    server: LiveServer, client: LangGraphClient, stub: Any, key: str
) -> None:
    stub.add_script(key, [{"content": "one two three"}])
    tid = await new_thread(client)
    everything = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode="messages-tuple")
    )
    run_id = everything[0].data["run_id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        for cursor in (1, 4, len(everything) - 1, len(everything)):
            headers = {"Last-Event-ID": str(cursor)}
            path = f"/threads/{tid}/runs/{run_id}/stream"
            async with http.stream("GET", path, headers=headers) as response:
                frames = [f async for f in sse_frames(response)]
            assert [(f.event, f.data, f.field("id")) for f in frames] == [
                (e.event, e.data, e.id) for e in everything[cursor:]
            ]


async def test_join_stream_keeps_only_the_requested_modes(
    client: LangGraphClient, stub: Any, key: str
) -> None:
    stub.add_script(key, [{"content": "one two"}])
    tid = await new_thread(client)
    everything = await collect(
        client.runs.stream(tid, "lead_agent", input=user(key), stream_mode=["values", "updates"])
    )
    run_id = everything[0].data["run_id"]
    only_values = await collect(client.runs.join_stream(tid, run_id, stream_mode="values"))
    assert only_values == [e for e in everything if e.event != "updates"]
    kinds = names(only_values)
    assert (kinds[0], kinds[-1], set(kinds[1:-1])) == ("metadata", "end", {"values"})
    assert "updates" in names(everything)


async def test_join_stream_of_an_unknown_run_is_404(client: LangGraphClient) -> None:
    tid = await new_thread(client)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await collect(client.runs.join_stream(tid, "00000000-0000-0000-0000-000000000000"))
    assert caught.value.response.status_code == 404


# -- a server with a tiny retention window and fast heartbeats ------------------------------


@pytest.fixture(scope="module")
def tuned(stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-tuned-streams")
    config = base_config(
        stub,
        workdir / "data",
        streams={"retention_events": RETENTION, "heartbeat_seconds": 0.2},
    )
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


async def test_cursor_behind_a_finished_runs_window_gets_exactly_one_gap(
    tuned: LiveServer, stub: Any, key: str
) -> None:
    stub.add_script(key, [{"content": slow_text(12)}])
    client = get_client(url=tuned.url, timeout=60)
    try:
        tid = await new_thread(client)
        run = await client.runs.create(
            tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
        )
        await client.runs.join(tid, run["run_id"])
        joined = await collect(client.runs.join_stream(tid, run["run_id"], last_event_id="2"))
        from_start = await collect(client.runs.join_stream(tid, run["run_id"], last_event_id="0"))
    finally:
        await client.aclose()
    latest = int(joined[0].id or 0)
    assert pairs(joined) == [
        (
            "gap",
            {
                "requested": 2,
                "earliest": latest - RETENTION + 1,
                "latest": latest,
                "hint": GAP_HINT,
            },
        )
    ]
    assert pairs(from_start) == [
        (
            "gap",
            {
                "requested": 0,
                "earliest": latest - RETENTION + 1,
                "latest": latest,
                "hint": GAP_HINT,
            },
        )
    ]
    assert joined[0].id == from_start[0].id == str(latest)
    assert latest > RETENTION + 2


async def test_live_subscriber_behind_the_window_gets_one_gap_and_the_stream_closes(
    tuned: LiveServer, stub: Any, key: str
) -> None:
    stub.add_script(key, [slow_turn(40, 0.05)])
    async with httpx.AsyncClient(base_url=tuned.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(key), "stream_mode": "messages-tuple"}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as live:
            run_id = live.headers["content-location"].rsplit("/", 1)[1]
            async for frame in sse_frames(live):
                if int(frame.field("id") or 0) >= RETENTION + 4:
                    break
            path = f"/threads/{tid}/runs/{run_id}/stream"
            async with http.stream("GET", path, headers={"Last-Event-ID": "2"}) as late:
                frames = [f async for f in sse_frames(late)]
            assert (await http.get(f"/threads/{tid}/runs/{run_id}")).json()["status"] == "running"
    (gap,) = frames
    latest = gap.data["latest"]
    assert gap.event == "gap"
    assert gap.data == {
        "requested": 2,
        "earliest": latest - RETENTION + 1,
        "latest": latest,
        "hint": GAP_HINT,
    }
    assert latest >= RETENTION + 4
    assert gap.field("id") == str(latest)


async def test_heartbeats_while_the_run_is_idle(tuned: LiveServer, stub: Any, key: str) -> None:
    """The model takes 1.2 s to answer: heartbeats (0.2 s apart) fill exactly that silence."""
    script(stub, key, {"content": "late answer", "delay": 1.2})
    frames: list[tuple[float, Frame]] = []
    async with httpx.AsyncClient(base_url=tuned.url, timeout=30) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        body = {"assistant_id": "lead_agent", "input": user(key), "stream_mode": "values"}
        async with http.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
            async for frame in sse_frames(response):
                frames.append((time.monotonic(), frame))
    events = [(f.event, f.data) for _, f in frames if not f.comment]
    beats = [(i, t) for i, (t, f) in enumerate(frames) if f.comment]
    run_id = events[0][1]["run_id"]
    exchange = Expected(Lead.of(tuned, tid), run_id, key, ai_invoked("late answer"))
    assert events == [metadata_event(run_id, tid), *exchange.values(), end_event(run_id)]
    assert {frames[i][1].lines for i, _ in beats} == {(": heartbeat",)}
    # the model's silence (after the last values before the model step, before the first
    # values after it) is filled with heartbeats; a loaded machine may add a beat elsewhere
    quiet_from = len(exchange.values(until="model")) + 1
    in_silence = [(i, t) for i, t in beats if i >= quiet_from]
    assert [i for i, _ in in_silence] == list(range(quiet_from, quiet_from + len(in_silence)))
    assert len(in_silence) >= 3
    # no silence longer than a few beat periods (the client may read two beats in one go on
    # a loaded machine, so a short interval says nothing)
    intervals = [b - a for (_, a), (_, b) in zip(in_silence, in_silence[1:], strict=False)]
    assert all(i < 0.8 for i in intervals), intervals
