"""Helpers for the sandbox and tool attack corpus: a server with small limits, tool calls
made by the scripted model, and proof that the server kept answering meanwhile."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.support.openai_stub import StubServerThread

T = TypeVar("T")

WS = "/mnt/user-data/workspace"
RUN_AS_UID = 64_000

#: The limits of the corpus server (config ``sandbox:``), small enough to reach quickly.
SANDBOX = {
    "timeout_seconds": 30,
    "run_as_uid": RUN_AS_UID,
    "limits": {
        "memory_mib": 512,
        "processes": 64,
        "cpu_seconds": 3,
        "file_size_mib": 256,
        "tmp_mib": 16,
        "disk_quota_mib": 64,
        "max_concurrent": 2,
    },
}

requires_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed"
)


def host_uid() -> int:
    """The host uid sandboxed commands run as, seen from outside."""
    return RUN_AS_UID if os.geteuid() == 0 else os.geteuid()


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": {"description": "attack", **args}}


async def tool_calls(
    lg: LangGraphClient, stub: StubServerThread, key: str, *calls: dict[str, Any]
) -> list[tuple[str, str, str]]:
    """Have the model make ``calls`` one per turn in a new thread: (tool, status, content)."""
    stub.add_script(key, [*({"tool_calls": [c]} for c in calls), {"content": "done"}])
    thread = await lg.threads.create()
    return await tool_calls_in(lg, thread["thread_id"], key)


async def tool_calls_in(lg: LangGraphClient, tid: str, key: str) -> list[tuple[str, str, str]]:
    values = await lg.runs.wait(
        tid, "lead_agent", input={"messages": [{"role": "user", "content": key}]}
    )
    assert isinstance(values, dict), values
    assert values["messages"][-1]["content"] == "done", values["messages"][-1]
    return [
        (m["name"], m.get("status", "success"), m["content"])
        for m in values["messages"]
        if m["type"] == "tool"
    ]


async def while_answering(http: httpx.AsyncClient, work: Awaitable[T]) -> tuple[T, int]:
    """Await ``work`` while asking ``GET /ok`` again and again: its result, and how many
    times ``/ok`` answered 200 meanwhile (each within the client's timeout, or the test
    fails)."""
    task = asyncio.ensure_future(work)
    answered = 0
    try:
        while not task.done():
            response = await http.get("/ok")
            assert response.status_code == 200, response.text
            answered += 1
            await asyncio.wait([task], timeout=0.1)
    finally:
        if not task.done():
            task.cancel()
    return await task, answered
