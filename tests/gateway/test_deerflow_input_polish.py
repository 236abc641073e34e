"""DeerFlow's ``POST /api/input-polish``: the composer's draft rewritten by the default model,
with nothing stored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fawn.gateway.input_polish import INSTRUCTION
from tests.support.live import LiveServer
from tests.support.problems import problem


@pytest.mark.parametrize(
    ("reply", "rewritten", "changed"),
    [
        ("```\nWrite a one-page report.\n```", "Write a one-page report.", True),
        (
            "<think>shorter is better</think>\nWrite a one-page report.",
            "Write a one-page report.",
            True,
        ),
        ("{draft}", "{draft}", False),
    ],
)
async def test_a_draft_is_rewritten_by_the_default_model(
    server: LiveServer, stub: Any, key: str, reply: str, rewritten: str, changed: bool
) -> None:
    draft = f"{key} report pls"
    stub.add_script(key, [{"content": reply.format(draft=draft)}])
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        threads_before = (await http.post("/threads/search", json={"limit": 1000})).json()
        answer = await http.post(
            "/api/input-polish", json={"text": f"  {draft}\n", "locale": "en-US", "thread_id": "t"}
        )
        threads_after = (await http.post("/threads/search", json={"limit": 1000})).json()
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"rewritten_text": rewritten.format(draft=draft), "changed": changed}
    [request] = stub.requests_for(key)
    assert [(m["role"], m["content"]) for m in request["messages"]] == [
        ("system", INSTRUCTION),
        ("user", f"Language: en-US\n\n<draft>\n{draft}\n</draft>"),
    ]
    assert (request["model"], request.get("tools")) == ("stub-model", None)  # the default
    assert len(threads_after) == len(threads_before)  # no run, no thread


async def test_drafts_it_refuses_and_a_failing_model(
    server: LiveServer, stub: Any, key: str
) -> None:
    stub.add_script(key, [{"error": {"status": 400, "message": "boom"}}])
    stub.add_script(f"{key}-empty", [{"content": "<think>only thinking</think>"}])
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        blank = await http.post("/api/input-polish", json={"text": " \n "})
        long = await http.post("/api/input-polish", json={"text": "x" * 4001})
        failing = await http.post("/api/input-polish", json={"text": f"{key} draft"})
        empty = await http.post("/api/input-polish", json={"text": f"{key}-empty draft"})
    assert (blank.status_code, blank.json()) == (
        422,
        problem("text: the draft is empty", "invalid_input"),
    )
    assert (long.status_code, long.json()) == (
        422,
        problem("text: the draft exceeds 4000 characters", "invalid_input"),
    )
    assert (failing.status_code, failing.json()) == (
        502,
        problem(
            "the model could not polish the draft; try again", "model_call_failed", retryable=True
        ),
    )
    assert (empty.status_code, empty.json()) == (
        502,
        problem(
            "the model answered with an empty draft; try again",
            "model_call_failed",
            retryable=True,
        ),
    )
