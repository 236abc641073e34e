"""DeerFlow's ``POST /api/threads/{id}/compact``: the older messages summarized now, on
request (summarization on), or DeerFlow's 409 when summarization is off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import base_config
from tests.runs.runs_helpers import user
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.problems import problem

SUMMARY_PREFIX = "Here is a summary of the conversation to date:"


@pytest.fixture(scope="module")
def summarizing(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-summarizing")
    config = base_config(stub, workdir / "data", summarization={"enabled": True})
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


async def _two_turns(http: httpx.AsyncClient, key: str) -> str:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    for text in (key, "again"):
        done = await http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user(text)}
        )
        assert done.status_code == 200, done.text
    return str(tid)


def _shape(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["content"]) for m in state["values"]["messages"]]


async def test_compaction_summarizes_the_older_messages_and_the_thread_goes_on(
    summarizing: LiveServer, stub: StubServerThread, key: str
) -> None:
    # the summary request is the script's first turn too (it holds no assistant message), so
    # the summary names the key and the run after it still reaches this script
    stub.add_script(key, [{"content": f"one {key}"}, {"content": "two"}])
    async with httpx.AsyncClient(base_url=summarizing.url, timeout=60) as http:
        tid = await _two_turns(http, key)
        before = (await http.get(f"/threads/{tid}/state")).json()
        compacted = await http.post(
            f"/api/threads/{tid}/compact",
            json={"force": True, "keep": {"type": "messages", "value": 2}},
        )
        assert compacted.status_code == 200, compacted.text
        after = (await http.get(f"/threads/{tid}/state")).json()
        thread = (await http.get(f"/threads/{tid}")).json()
        went_on = await http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user("more")}
        )
        assert went_on.status_code == 200, went_on.text
    body = compacted.json()
    assert body == {
        "thread_id": tid,
        "compacted": True,
        "reason": None,
        "removed_message_count": 2,
        "preserved_message_count": 2,
        "summary_updated": True,
        "checkpoint_id": after["checkpoint"]["checkpoint_id"],
        "total_tokens": body["total_tokens"],
    }
    assert body["total_tokens"] > 0
    assert _shape(before) == [
        ("human", key),
        ("ai", f"one {key}"),
        ("human", "again"),
        ("ai", "two"),
    ]
    summary, *kept = after["values"]["messages"]
    assert (summary["type"], summary["content"]) == ("human", f"{SUMMARY_PREFIX}\n\none {key}")
    assert [m["id"] for m in kept] == [m["id"] for m in before["values"]["messages"][2:]]
    assert (after["next"], thread["status"]) == ([], "idle")
    # the summary request saw the two older messages; the next run reads the summary
    [summary_request] = [
        r["messages"]
        for r in stub.requests_for(key)
        if not r.get("tools") and "title" not in str(r["messages"]).lower()
    ]
    assert key in str(summary_request) and "again" not in str(summary_request)
    seen = [r["messages"] for r in stub.requests_for(key) if r.get("tools")][-1]
    assert [m["content"] for m in seen if m["role"] != "system"] == [
        summary["content"],
        "again",
        "two",
        "more",
    ]


async def test_nothing_to_compact_and_a_thread_that_must_not_be(
    summarizing: LiveServer, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "one"}, {"content": "two"}])
    ask = {
        "name": "ask_clarification",
        "args": {"question": "Which?", "clarification_type": "missing_info"},
    }
    stub.add_script(f"{key}-ask", [{"tool_calls": [ask]}])
    async with httpx.AsyncClient(base_url=summarizing.url, timeout=60) as http:
        tid = await _two_turns(http, key)
        before = (await http.get(f"/threads/{tid}/state")).json()
        short = await http.post(f"/api/threads/{tid}/compact", json={})
        below = await http.post(
            f"/api/threads/{tid}/compact",
            json={"force": False, "keep": {"type": "messages", "value": 1}},
        )
        after = (await http.get(f"/threads/{tid}/state")).json()
        asking = (await http.post("/threads", json={})).json()["thread_id"]
        await http.post(
            f"/threads/{asking}/runs/wait",
            json={"assistant_id": "lead_agent", "input": user(f"{key}-ask")},
        )
        paused = await http.post(f"/api/threads/{asking}/compact", json={})
        fraction = await http.post(
            f"/api/threads/{tid}/compact", json={"keep": {"type": "fraction", "value": 0.5}}
        )
        missing = await http.post(
            "/api/threads/00000000-0000-0000-0000-000000000000/compact", json={}
        )
    not_compacted = {
        "thread_id": tid,
        "compacted": False,
        "reason": "not_enough_messages",
        "removed_message_count": 0,
        "preserved_message_count": 0,
        "summary_updated": False,
        "checkpoint_id": None,
        "total_tokens": 0,
    }
    # keep 20 (the default) holds all four messages; not forced, 4 messages are far below
    # the trigger
    assert (short.status_code, short.json()) == (200, not_compacted)
    assert (below.status_code, below.json()) == (200, not_compacted)
    assert after["checkpoint"] == before["checkpoint"]
    assert (paused.status_code, paused.json()) == (
        409,
        problem("The thread waits for an answer. Compact after the run goes on.", "conflict"),
    )
    assert fraction.status_code == 422
    assert missing.status_code == 404


async def test_compaction_is_refused_when_summarization_is_off(
    server: LiveServer, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"content": "one"}, {"content": "two"}])
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = await _two_turns(http, key)
        refused = await http.post(f"/api/threads/{tid}/compact", json={"force": True})
    assert (refused.status_code, refused.json()) == (
        409,
        problem("Context compaction is disabled.", "conflict"),
    )
