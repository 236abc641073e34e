"""Edges of the runs API: ids that could never exist, and runs on a copied thread."""

from __future__ import annotations

import httpx
from langgraph_sdk.client import LangGraphClient

from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread


async def test_ids_with_nul_are_unknown_not_server_errors(
    server: LiveServer, client: LangGraphClient
) -> None:
    tid = (await client.threads.create())["thread_id"]
    async with httpx.AsyncClient(base_url=server.url) as http:
        responses = {
            "get run": await http.get(f"/threads/{tid}/runs/a%00b"),
            "cancel run": await http.post(f"/threads/{tid}/runs/a%00b/cancel"),
            "delete run": await http.delete(f"/threads/{tid}/runs/a%00b"),
            "runs of bad thread": await http.get("/threads/a%00b/runs/x"),
            "create on bad thread": await http.post(
                "/threads/a%00b/runs",
                json={"assistant_id": "lead_agent", "if_not_exists": "create"},
            ),
            "cancel many": await http.post("/runs/cancel", json={"run_ids": ["a\u0000"]}),
        }
    assert {name: r.status_code for name, r in responses.items()} == {
        "get run": 404,
        "cancel run": 404,
        "delete run": 404,
        "runs of bad thread": 404,
        "create on bad thread": 422,
        "cancel many": 422,  # NUL is refused in any JSON body (the edge's rule)
    }
    assert "thread_id" in responses["create on bad thread"].json()["detail"]
    assert responses["cancel many"].json()["detail"] == (
        "run_ids[0]: text may not contain NUL (\\u0000)"
    )


async def test_a_run_on_a_copied_thread_uses_its_own_sandbox(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    write = {"name": "bash", "args": {"description": "mark", "command": "echo parent > mark"}}
    look = {"name": "bash", "args": {"description": "look", "command": "cat mark || echo none"}}
    # one script: the stub picks it by the thread's first user message, which the copy shares
    turns = [
        {"tool_calls": [write]},
        {"content": "written"},
        {"tool_calls": [look]},
        {"content": "looked"},
    ]
    stub.add_script(key, turns, title="T")
    parent = (await client.threads.create())["thread_id"]
    await client.runs.wait(
        parent, "lead_agent", input={"messages": [{"role": "user", "content": key}]}
    )
    copy = (await client.threads.copy(parent))["thread_id"]

    result = await client.runs.wait(
        copy, "lead_agent", input={"messages": [{"role": "user", "content": "and now?"}]}
    )

    assert result["sandbox"] == {"sandbox_id": f"local:{copy}"}
    tool_results = [m["content"] for m in result["messages"] if m["type"] == "tool"]
    # the copy has the parent's files (copied at copy time), in its own workspace
    assert tool_results[-1].startswith("parent")
    workspace = server.data_dir / "threads" / copy / "user-data" / "workspace"
    assert (workspace / "mark").read_text() == "parent\n"
    run = (await client.runs.list(copy))[0]
    assert run["status"] == "success"
