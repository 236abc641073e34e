"""Sub-agents end to end: langgraph_sdk → live server → the lead's ``task`` tool → sub-agents
(their own graphs, scripted through the same OpenAI stub) running real bash in the thread's
bubblewrap sandbox.

A sub-agent's conversation starts from its task prompt, so the stub answers it from the
script whose key the prompt carries (``<key>-a``), while the lead's requests match ``<key>``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.runs.runs_helpers import ANY_INT
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = pytest.mark.bwrap

SUBAGENTS = {"subagent_enabled": True}


@pytest.fixture
async def lg(sqlite_server: LiveServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=sqlite_server.url, timeout=60)
    try:
        yield client
    finally:
        await client.aclose()


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def task(key: str, part: str, kind: str = "bash") -> dict[str, Any]:
    return {
        "name": "task",
        "args": {
            "description": f"part {part}",
            "prompt": f"{key}-{part}: produce part {part}",
            "subagent_type": kind,
        },
        "id": f"call_{part}",
    }


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "args": {"description": "run", "command": command}}


def tool_messages(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in values["messages"] if m["type"] == "tool"]


async def journal(server: LiveServer, tid: str, rid: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get(f"/api/threads/{tid}/runs/{rid}/events")
    assert response.status_code == 200
    events: list[dict[str, Any]] = response.json()["events"]
    return events


async def outcome(server: LiveServer, tid: str, rid: str) -> tuple[str, str]:
    """The run's (status, stop reason) as its journal closed it."""
    entries = await journal(server, tid, rid)
    finished = next(e["data"] for e in entries if e["kind"] == "run_finished")
    return finished["status"], finished["stop_reason"]


def script_subagent(stub: StubServerThread, key: str, part: str) -> None:
    stub.add_script(
        f"{key}-{part}",
        [
            {"tool_calls": [bash(f"echo part-{part} > /mnt/user-data/workspace/{part}.txt")]},
            # the pause keeps the three sub-agents in flight together
            {"content": f"wrote {part}.txt", "delay": 0.5},
        ],
    )


async def test_three_tasks_run_concurrently_a_fourth_is_refused_and_progress_streams(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {"tool_calls": [task(key, p) for p in ("a", "b", "c", "d")]},
            {"content": "all parts done"},
        ],
    )
    for part in "abc":
        script_subagent(stub, key, part)
    tid = (await lg.threads.create())["thread_id"]

    custom: list[dict[str, Any]] = []
    run_id = ""
    async for part in lg.runs.stream(
        tid,
        "lead_agent",
        input=user(key),
        stream_mode=["values", "custom"],
        context=SUBAGENTS,
    ):
        if part.event == "metadata":
            run_id = part.data["run_id"]
        if part.event == "custom":
            custom.append(part.data)
    values = await lg.threads.get_state(tid)

    results = tool_messages(values["values"])
    assert [(m["tool_call_id"], m["status"], m["content"]) for m in results] == [
        ("call_a", "success", "Task Succeeded. Result: wrote a.txt"),
        ("call_b", "success", "Task Succeeded. Result: wrote b.txt"),
        ("call_c", "success", "Task Succeeded. Result: wrote c.txt"),
        (
            "call_d",
            "error",
            "Error: task not started: at most 3 sub-agent tasks run at once and this step "
            "asked for more. Wait for the running tasks' results, then delegate this one "
            "again.",
        ),
    ]
    assert results[0]["additional_kwargs"] == {
        "subagent_status": "completed",
        "subagent_result_brief": "wrote a.txt",
        "subagent_result_sha256": ANY_STR,
        "subagent_model_name": "stub",
        "subagent_token_usage": {
            "input_tokens": ANY_INT,
            "output_tokens": ANY_INT,
            "total_tokens": ANY_INT,
        },
    }
    workspace = sqlite_server.data_dir / "threads" / tid / "user-data" / "workspace"
    assert sorted(p.name for p in workspace.glob("*.txt")) == ["a.txt", "b.txt", "c.txt"]
    assert values["values"]["delegations"] == [
        {
            "id": f"call_{p}",
            "run_id": run_id,
            "description": f"part {p}",
            "subagent_type": "bash",
            "status": "completed",
            "created_at": ANY_STR,
            "result_brief": f"wrote {p}.txt",
        }
        for p in "abc"
    ]

    for p in "abc":
        mine = [e for e in custom if e["task_id"] == f"call_{p}"]
        assert [e["type"] for e in mine] == [
            "task_started",
            "task_running",
            "task_running",
            "task_running",
            "task_completed",
        ]
        started, ai, tool, final, done = mine
        assert started == {
            "type": "task_started",
            "task_id": f"call_{p}",
            "description": f"part {p}",
            "subagent_type": "bash",
            "model_name": "stub",
        }
        assert (ai["message"]["type"], ai["message"]["tool_calls"][0]["name"]) == ("ai", "bash")
        assert (tool["message"]["type"], tool["message"]["name"]) == ("tool", "bash")
        assert final["message"]["content"] == f"wrote {p}.txt"
        assert [e["message_index"] for e in (ai, tool, final)] == [1, 2, 3]
        assert done["result"] == f"wrote {p}.txt"
    assert not [e for e in custom if e["task_id"] == "call_d"]

    entries = await journal(sqlite_server, tid, run_id)
    kinds = [e["kind"] for e in entries]
    started_at = [e["created_at"] for e in entries if e["kind"] == "subagent_started"]
    finished_at = [e["created_at"] for e in entries if e["kind"] == "subagent_finished"]
    assert len(started_at) == len(finished_at) == 3
    # the three overlapped: every one started before the first one finished
    assert max(started_at) < min(finished_at)
    assert kinds.index("subagent_finished") > max(
        i for i, k in enumerate(kinds) if k == "subagent_started"
    )
    steps = [e["data"] for e in entries if e["kind"] == "subagent_step"]
    assert len(steps) == 9
    finished = next(e["data"] for e in entries if e["kind"] == "run_finished")
    assert finished["usage_by_agent"]["subagents"]["total_tokens"] > 0
    assert finished["usage"]["total_tokens"] == (
        finished["usage_by_agent"]["lead"]["total_tokens"]
        + finished["usage_by_agent"]["subagents"]["total_tokens"]
    )
    # DeerFlow's app reads the same split from the thread's token usage
    async with httpx.AsyncClient(base_url=sqlite_server.url, timeout=30) as http:
        usage = (await http.get(f"/api/threads/{tid}/token-usage")).json()
    assert (usage["total_tokens"], usage["by_caller"]) == (
        finished["usage"]["total_tokens"],
        {
            "lead_agent": finished["usage_by_agent"]["lead"]["total_tokens"],
            "subagent": finished["usage_by_agent"]["subagents"]["total_tokens"],
            "middleware": 0,
        },
    )


class _AnyStr:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str)

    def __repr__(self) -> str:
        return "ANY_STR"


ANY_STR = _AnyStr()


def processes_with(marker: str) -> list[int]:
    """Host processes whose command line carries ``marker`` (a sandbox command's text is
    in the argv of its bwrap and its shell)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


async def wait_for(predicate: Any, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_cancelling_the_parent_stops_every_subagent_and_its_commands(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    marker = f"{key}-sleeper"
    stub.add_script(key, [{"tool_calls": [task(key, p) for p in "abc"]}, {"content": "never"}])
    workspace = "/mnt/user-data/workspace"
    for part in "abc":
        command = f"sleep 300; echo late > {workspace}/late-{part}.txt # {marker}-{part}"
        stub.add_script(f"{key}-{part}", [{"tool_calls": [bash(command)]}, {"content": "no"}])
    tid = (await lg.threads.create())["thread_id"]
    run = await lg.runs.create(tid, "lead_agent", input=user(key), context=SUBAGENTS)

    await wait_for(
        lambda: all(processes_with(f"{marker}-{p}") for p in "abc"), "the three sleeps to start"
    )
    cancelled_at = time.monotonic()
    await lg.runs.cancel(tid, run["run_id"])
    await wait_for(lambda: not processes_with(marker), "the sleeps to be killed")
    stopped_after = time.monotonic() - cancelled_at
    print(f"sub-agent commands gone {stopped_after:.3f} s after the cancel request")

    await lg.runs.join(tid, run["run_id"])
    record = await lg.runs.get(tid, run["run_id"])
    assert record["status"] == "interrupted"
    entries = await journal(sqlite_server, tid, run["run_id"])
    finished = [e["data"] for e in entries if e["kind"] == "subagent_finished"]
    assert sorted(finished, key=lambda d: d["task_id"]) == [
        {"task_id": f"call_{p}", "subagent_type": "bash", "status": "cancelled"} for p in "abc"
    ]
    user_data = sqlite_server.data_dir / "threads" / tid / "user-data" / "workspace"
    assert not list(user_data.glob("late-*.txt"))
    state = await lg.threads.get_state(tid)
    assert [d["status"] for d in state["values"]["delegations"]] == ["in_progress"] * 3

    # the next run on the thread closes the abandoned delegations
    stub.add_script(f"{key}-next", ["fine"])
    await lg.runs.wait(tid, "lead_agent", input=user(f"{key}-next"))
    state = await lg.threads.get_state(tid)
    assert [d["status"] for d in state["values"]["delegations"]] == ["cancelled"] * 3


async def test_a_model_that_keeps_delegating_past_the_run_total_is_capped(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    # the run total is 6 (subagents.max_total_per_run's default): 3 + 3, then one more
    stub.add_script(
        key,
        [
            {"tool_calls": [task(key, p) for p in ("a", "b", "c")]},
            {"tool_calls": [task(key, p) for p in ("d", "e", "f")]},
            {"content": "still going", "tool_calls": [task(key, "g")]},
        ],
    )
    for part in "abcdef":
        stub.add_script(f"{key}-{part}", [f"did {part}"])
    tid = (await lg.threads.create())["thread_id"]
    run = await lg.runs.create(tid, "lead_agent", input=user(key), context=SUBAGENTS)
    await lg.runs.join(tid, run["run_id"])
    values = (await lg.threads.get_state(tid))["values"]

    assert [m["content"] for m in tool_messages(values)] == [
        f"Task Succeeded. Result: did {p}" for p in "abcdef"
    ]
    last = values["messages"][-1]
    assert (last["type"], last["tool_calls"]) == ("ai", [])
    assert last["content"] == (
        "still going\n\n[Stopped: this run already used its 6 sub-agent tasks and asked for more.]"
    )
    assert last["additional_kwargs"]["fawn_stop_reason"] == "subagent_limit_capped"
    assert await outcome(sqlite_server, tid, run["run_id"]) == ("success", "subagent_limit_capped")


async def test_without_subagent_enabled_the_task_tool_is_hidden_and_refused(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, [{"tool_calls": [task(key, "a")]}, {"content": "ok"}])
    tid = (await lg.threads.create())["thread_id"]

    values = await lg.runs.wait(tid, "lead_agent", input=user(key))

    assert isinstance(values, dict)
    assert [(m["status"], m["content"]) for m in tool_messages(values)] == [
        (
            "error",
            "Error: task is not available in this run: sub-agents are off (the run has "
            "subagent_enabled=false)",
        )
    ]
    offered = [t["function"]["name"] for t in stub.requests_for(key)[0]["tools"]]
    assert "task" not in offered
    assert "delegations" not in values


async def test_unknown_types_fail_and_general_purpose_gets_every_tool_but_the_leads(
    lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(
        key,
        [
            {"tool_calls": [task(key, "a", "general-purpose"), task(key, "b", "wizard")]},
            {"content": "ok"},
        ],
    )
    stub.add_script(f"{key}-a", ["general answer"])
    tid = (await lg.threads.create())["thread_id"]

    values = await lg.runs.wait(tid, "lead_agent", input=user(key), context=SUBAGENTS)

    assert isinstance(values, dict)
    results = tool_messages(values)
    assert [(m["status"], m["content"]) for m in results] == [
        ("success", "Task Succeeded. Result: general answer"),
        (
            "error",
            "Task failed. Error: unknown subagent_type 'wizard'; available: general-purpose, bash",
        ),
    ]
    assert results[1]["additional_kwargs"] == {
        "subagent_status": "failed",
        "subagent_error": "unknown subagent_type 'wizard'; available: general-purpose, bash",
    }
    sub_request = stub.requests_for(f"{key}-a")[0]
    assert sorted(t["function"]["name"] for t in sub_request["tools"]) == [
        "bash",
        "glob",
        "grep",
        "ls",
        "read_file",
        "str_replace",
        "write_file",
    ]
    # the sub-agent saw its own prompt, never the lead's conversation
    assert [m["role"] for m in sub_request["messages"]] == ["system", "user"]
    assert sub_request["messages"][1]["content"] == f"{key}-a: produce part a"
    assert [d["status"] for d in values["delegations"]] == ["completed", "failed"]
