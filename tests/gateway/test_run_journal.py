"""``GET /api/threads/{tid}/runs/{rid}/events``: the durable journal of a finished run."""

from __future__ import annotations

from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import ANY_INT, ANY_ISO
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def journal(server: LiveServer, tid: str, rid: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url) as http:
        return await http.get(f"/api/threads/{tid}/runs/{rid}/events")


def entry(seq: int, kind: str, data: Any) -> dict[str, Any]:
    return {"seq": seq, "kind": kind, "data": data, "created_at": ANY_ISO}


async def test_a_run_with_tool_calls_leaves_its_journal(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    ok = {"name": "bash", "args": {"description": "hi", "command": "echo hi"}}
    bad = {"name": "read_file", "args": {"description": "x", "path": "/mnt/user-data/none"}}
    stub.add_script(key, [{"tool_calls": [ok]}, {"tool_calls": [bad]}, {"content": "done"}])
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(
        tid, "lead_agent", input=user(key), config={"configurable": {"thinking_enabled": True}}
    )
    await client.runs.join(tid, run["run_id"])

    response = await journal(server, tid, run["run_id"])

    assert response.status_code == 200
    assert response.json() == {
        "events": [
            entry(1, "run_started", {"run_id": run["run_id"]}),
            entry(2, "tool_started", {"tool": "bash"}),
            entry(
                3, "tool_finished", {"tool": "bash", "status": "success", "duration_ms": ANY_INT}
            ),
            entry(4, "tool_started", {"tool": "read_file"}),
            entry(
                5,
                "tool_finished",
                {
                    "tool": "read_file",
                    "status": "error",
                    "duration_ms": ANY_INT,
                    "error": "PathOutsideSandbox: /mnt/user-data/none is outside the sandbox; use "
                    "paths under /mnt/user-data/workspace, /mnt/user-data/uploads, "
                    "/mnt/user-data/outputs or /mnt/skills",
                },
            ),
            entry(6, "warning", {"message": "model 'stub' does not support thinking; ignored"}),
            entry(
                7,
                "workspace_changes",
                {"recorded": True, "added": [], "modified": [], "deleted": []},
            ),
            entry(
                8,
                "run_finished",
                {
                    "status": "success",
                    "stop_reason": "completed",
                    "duration_ms": ANY_INT,
                    "usage": {
                        "prompt_tokens": ANY_INT,
                        "completion_tokens": ANY_INT,
                        "total_tokens": ANY_INT,
                    },
                },
            ),
        ]
    }


async def test_errors_unknown_runs_and_rollbacks(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"error": {"status": 400, "message": "bad request from the model"}}])
    tid = (await client.threads.create())["thread_id"]
    run = await client.runs.create(tid, "lead_agent", input=user(key))
    await client.runs.join(tid, run["run_id"])
    events = (await journal(server, tid, run["run_id"])).json()["events"]
    assert [e["kind"] for e in events] == [
        "run_started",
        "error",
        "workspace_changes",
        "run_finished",
    ]
    assert events[3]["data"]["status"] == "error"

    unknown = await journal(server, tid, "00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 404

    stub.add_script(f"{key}-slow", [{"content": "slow", "delay": 5.0}])
    tid2 = (await client.threads.create())["thread_id"]
    slow = await client.runs.create(tid2, "lead_agent", input=user(f"{key}-slow"))
    await client.runs.cancel(tid2, slow["run_id"], wait=True, action="rollback")
    assert (await journal(server, tid2, slow["run_id"])).status_code == 404
