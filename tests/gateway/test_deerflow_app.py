"""DeerFlow's web app against fawn unchanged: what it sends (``context.mode``) and the
application routes it calls, with its paths and shapes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.runs.runs_helpers import ANY_ISO, ANY_UUID, human, script, user
from tests.support.live import LiveServer
from tests.support.problems import problem


def _deerflow_context(mode: str, tid: str) -> dict[str, Any]:
    """The context DeerFlow's app sends with every message (frontend threads/hooks.ts)."""
    effort = {"ultra": "high", "pro": "medium", "thinking": "low"}.get(mode)
    context: dict[str, Any] = {
        "model_name": "stub",
        "mode": mode,
        "thinking_enabled": mode != "flash",
        "is_plan_mode": mode in ("pro", "ultra"),
        "subagent_enabled": mode == "ultra",
        "thread_id": tid,
    }
    if effort is not None:
        context["reasoning_effort"] = effort
    return context


def _tools(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools") or []}


@pytest.mark.parametrize(
    ("mode", "given", "plan", "task"),
    [
        ("flash", True, False, False),
        ("thinking", True, False, False),
        ("pro", True, True, False),
        ("ultra", True, True, True),
        ("ultra", False, True, True),  # the mode alone turns them on
        ("flash", False, False, False),
    ],
)
async def test_context_mode_turns_on_what_deerflow_means(
    server: LiveServer, stub: Any, key: str, mode: str, given: bool, plan: bool, task: bool
) -> None:
    script(stub, key, {"content": "ok"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        context = _deerflow_context(mode, tid) if given else {"mode": mode}
        answer = await http.post(
            f"/threads/{tid}/runs/wait",
            json={
                "assistant_id": "lead_agent",
                "input": user(key),
                "context": context,
                "config": {"recursion_limit": 1000},
                "stream_resumable": True,
            },
        )
    assert answer.status_code == 200, answer.text
    model_calls = [r for r in stub.requests_for(key) if r.get("tools")]
    tools = _tools(model_calls[0])
    assert ("write_todos" in tools, "task" in tools) == (plan, task)


async def test_an_unknown_mode_is_422(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        refused = await http.post(
            f"/threads/{tid}/runs",
            json={"assistant_id": "lead_agent", "input": user("x"), "context": {"mode": "max"}},
        )
    assert refused.status_code == 422
    assert refused.json() == problem(
        "mode must be one of flash, thinking, pro, ultra", "invalid_input"
    )


async def test_capabilities_fawn_lacks_answer_none_or_off(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        reads = {
            path: (await http.get(path)).json()
            for path in (
                "/api/features",
                "/api/suggestions/config",
                "/api/skills",
                "/api/channels/providers",
                "/api/channels/connections",
                "/api/agents",
                "/api/scheduled-tasks",
                "/api/mcp/config",
                "/api/memory/config",
            )
        }
        memory = (await http.get("/api/memory")).json()
        refusals = [
            await http.post("/api/skills/install", json={}),
            await http.post("/api/memory/facts", json={"content": "x"}),
            await http.put("/api/mcp/config", json={"mcp_servers": {}}),
            await http.get("/api/agents/check", params={"name": "mine"}),
        ]
        skill = await http.get("/api/skills/deep-research")
        agent = await http.get("/api/agents/mine")
    assert reads == {
        "/api/features": {
            "agents_api": {"enabled": False},
            "browser_control": {"enabled": False},
            "mcp_tasks": {"enabled": False},
        },
        "/api/suggestions/config": {"enabled": False, "max_suggestions": 0},
        "/api/skills": {"skills": []},
        "/api/channels/providers": {"enabled": False, "providers": []},
        "/api/channels/connections": {"connections": []},
        "/api/agents": {"agents": []},
        "/api/scheduled-tasks": [],
        "/api/mcp/config": {"mcp_servers": {}},
        "/api/memory/config": {
            "enabled": False,
            "mode": "middleware",
            "injection_enabled": False,
            "shutdown_flush_timeout_seconds": 0.0,
            "manager_class": "none",
            "backend_config": {},
        },
    }
    assert (memory["facts"], memory["user"]["topOfMind"]) == ([], {"summary": "", "updatedAt": ""})
    assert [(r.status_code, r.json()["code"]) for r in refusals] == [(404, "not_supported")] * 4
    assert "agents_api.enabled" in refusals[-1].json()["detail"]
    assert skill.json() == problem(
        "skill 'deep-research' not found: no skills are installed", "not_found"
    )
    assert agent.status_code == 404


async def test_a_thread_its_messages_and_usage(server: LiveServer, stub: Any, key: str) -> None:
    script(stub, key, {"content": "first answer"}, {"content": "second answer"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        runs = []
        for text in (key, "again"):
            done = await http.post(
                f"/threads/{tid}/runs/wait",
                json={"assistant_id": "lead_agent", "input": user(text)},
            )
            runs.append(done.headers["content-location"].rsplit("/", 1)[1])
        thread = (await http.get(f"/api/threads/{tid}")).json()
        page = (await http.get(f"/api/threads/{tid}/messages/page", params={"limit": 3})).json()
        older = await http.get(
            f"/api/threads/{tid}/messages/page", params={"before_seq": page["next_before_seq"]}
        )
        usage = (await http.get(f"/api/threads/{tid}/token-usage")).json()
        run_list = (await http.get(f"/threads/{tid}/runs")).json()
        deleted = await http.delete(f"/api/threads/{tid}")
        gone = await http.get(f"/api/threads/{tid}")
    assert set(thread) == {
        "thread_id",
        "status",
        "created_at",
        "updated_at",
        "metadata",
        "values",
        "interrupts",
    }
    assert (thread["thread_id"], thread["status"], thread["interrupts"]) == (tid, "idle", {})
    assert [m["content"] for m in thread["values"]["messages"]] == [
        key,
        "first answer",
        "again",
        "second answer",
    ]
    assert [(row["seq"], row["run_id"]) for row in page["data"]] == [
        (2, runs[0]),
        (3, runs[1]),
        (4, runs[1]),
    ]
    assert (page["has_more"], page["next_before_seq"]) == (True, 2)
    assert page["data"][1]["content"] == human("again")
    assert [row["created_at"] for row in page["data"]] == [ANY_ISO] * 3
    assert page["data"][0]["metadata"] == {"caller": "lead_agent"}
    assert older.json() == {
        "data": [
            {
                "run_id": runs[0],
                "seq": 1,
                "content": human(key),
                "metadata": {"caller": "lead_agent"},
                "created_at": ANY_ISO,
            }
        ],
        "has_more": False,
        "next_before_seq": None,
    }
    totals = [r["usage"] for r in run_list]
    assert usage == {
        "thread_id": tid,
        "total_tokens": sum(u["total_tokens"] for u in totals),
        "total_input_tokens": sum(u["prompt_tokens"] for u in totals),
        "total_output_tokens": sum(u["completion_tokens"] for u in totals),
        "total_runs": 2,
        "by_model": {"stub": {"tokens": sum(u["total_tokens"] for u in totals), "runs": 2}},
        "by_caller": {
            "lead_agent": sum(u["total_tokens"] for u in totals),
            "subagent": 0,
            "middleware": 0,
        },
        "context_usage": None,
    }
    assert usage["total_tokens"] > 0
    assert deleted.json() == {"success": True, "message": f"Deleted thread {tid}"}
    assert gone.status_code == 404
    assert runs[0] == ANY_UUID


async def test_feedback_is_refused_for_a_known_run(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        unknown = await http.put(
            f"/api/threads/{tid}/runs/{uuid.uuid4()}/feedback", json={"rating": 1}
        )
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "not_found"


async def test_a_thread_is_pinned_by_patching_its_metadata(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={"metadata": {"topic": "x"}})).json()["thread_id"]
        pinned = await http.patch(
            f"/api/threads/{tid}", json={"metadata": {"deerflow_pinned": True}}
        )
        found = (
            await http.post("/threads/search", json={"metadata": {"deerflow_pinned": True}})
        ).json()
        missing = await http.patch(
            "/api/threads/00000000-0000-0000-0000-000000000000", json={"metadata": {}}
        )
        malformed = await http.patch(f"/api/threads/{tid}", json={"metadata": [1]})
    assert pinned.status_code == 200, pinned.text
    assert pinned.json() == {
        "thread_id": tid,
        "status": "idle",
        "created_at": ANY_ISO,
        "updated_at": ANY_ISO,
        "metadata": {"topic": "x", "deerflow_pinned": True},
    }
    assert tid in [t["thread_id"] for t in found]
    assert missing.status_code == 404
    assert malformed.status_code == 422


async def test_the_langgraph_api_answers_under_api_as_deerflows_gateway_serves_it(
    server: LiveServer, stub: Any, key: str
) -> None:
    """DeerFlow's app reaches the LangGraph API through its own proxy at ``/api/langgraph``,
    which its gateway serves at ``/api``: the stock SDK works there, on the same records."""
    script(stub, key, {"content": "under api"})
    client = get_client(url=f"{server.url}/api", timeout=60)
    root = get_client(url=server.url, timeout=60)
    try:
        thread = await client.threads.create(metadata={"k": key})
        tid = thread["thread_id"]
        answer = await client.runs.wait(tid, "lead_agent", input=user(key))
        assert isinstance(answer, dict)
        assert [m["content"] for m in answer["messages"]] == [key, "under api"]
        found = await client.threads.search(metadata={"k": key})
        assert [t["thread_id"] for t in found] == [tid]
        assert (await root.threads.get_state(tid)) == (await client.threads.get_state(tid))
        assert [r["run_id"] for r in await client.runs.list(tid)] == [
            r["run_id"] for r in await root.runs.list(tid)
        ]
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
            assert (await http.get("/openapi.json")).json()["paths"].get("/api/threads") is None
    finally:
        await client.aclose()
        await root.aclose()
