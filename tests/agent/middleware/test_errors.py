"""Keeping the conversation well-formed when calls fail: dangling tool calls, model errors,
tool errors, and control flow that must pass through."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import interrupt

from fawn.agent.middleware.dangling_tool_calls import NOT_EXECUTED, repair
from tests.agent.middleware.harness import make_harness

ASK = {
    "name": "ask_clarification",
    "args": {"question": "Which colour?", "clarification_type": "missing_info"},
}


def _shape(messages: list[Any]) -> list[tuple[str, Any]]:
    shaped: list[tuple[str, Any]] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            shaped.append(("tool", (m.tool_call_id, m.status, m.text)))
        elif isinstance(m, AIMessage):
            shaped.append(("ai", [c["id"] for c in m.tool_calls] or m.text))
        else:
            shaped.append((m.type, m.text))
    return shaped


def test_repair_answers_each_missing_call_right_after_its_results() -> None:
    calls = [{"name": "a", "args": {}, "id": "1"}, {"name": "b", "args": {}, "id": "2"}]
    history: list[Any] = [
        HumanMessage("go", id="h1"),
        AIMessage("", tool_calls=calls, id="a1"),
        ToolMessage("done", tool_call_id="1", id="t1"),
        HumanMessage("stop, do this instead", id="h2"),
    ]
    repaired = repair(history)
    assert repaired is not None
    assert _shape(repaired) == [
        ("human", "go"),
        ("ai", ["1", "2"]),
        ("tool", ("1", "success", "done")),
        ("tool", ("2", "error", NOT_EXECUTED)),
        ("human", "stop, do this instead"),
    ]
    assert repair(repaired) is None


async def test_a_clarification_answered_by_a_new_message_leaves_no_call_unanswered(
    tmp_path: Path,
) -> None:
    h = make_harness(tmp_path, [{"tool_calls": [ASK]}, "Blue it is."])

    await h.run("paint the fence")
    assert await h.interrupts() != []
    values = await h.run("blue")

    expected = [
        ("human", "paint the fence"),
        ("ai", ["call_0_0"]),
        ("tool", ("call_0_0", "success", "❓ Which colour?")),
        ("human", "blue"),
    ]
    assert _shape(h.recorder.calls[-1][1:]) == expected  # what the model saw
    assert _shape(values["messages"]) == [*expected, ("ai", "Blue it is.")]  # what is stored
    assert await h.interrupts() == []


async def test_a_failing_model_is_retried_then_marked(tmp_path: Path) -> None:
    h = make_harness(
        tmp_path,
        [{"error": {"status": 503, "message": "overloaded"}}],
        agent={"model_retries": 2},
    )

    values = await h.run("hello")

    assert len(h.recorder.calls) == 3
    last = values["messages"][-1]
    assert isinstance(last, AIMessage)
    assert last.additional_kwargs == {
        "fawn_error": {"error": "ScriptedModelError", "message": "503: overloaded"}
    }
    assert last.text == "The model call failed: 503: overloaded"
    assert last.tool_calls == []


async def test_a_request_error_is_not_retried(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [{"error": {"status": 400, "message": "bad request"}}])

    values = await h.run("hello")

    assert len(h.recorder.calls) == 1
    assert values["messages"][-1].additional_kwargs["fawn_error"]["message"] == "400: bad request"


async def test_cancelling_a_model_call_is_not_an_error(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [{"content": "slow", "delay": 30}])

    task = asyncio.create_task(h.run("hello"))
    await h.recorder.called.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m.type for m in await h.messages()] == ["human"]


def _exploding() -> BaseTool:
    @tool
    async def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"kaput: {reason}")

    return explode


async def test_a_raising_tool_becomes_an_error_result_and_the_run_completes(
    tmp_path: Path,
) -> None:
    h = make_harness(
        tmp_path,
        [
            {"tool_calls": [{"name": "explode", "args": {"reason": "gears"}}]},
            "It failed; here is what I know.",
        ],
        tools=[_exploding()],
    )

    values = await h.run("try it")

    assert _shape(values["messages"]) == [
        ("human", "try it"),
        ("ai", ["call_0_0"]),
        ("tool", ("call_0_0", "error", "Error: kaput: gears")),
        ("ai", "It failed; here is what I know."),
    ]


@tool
async def confirm(action: str) -> str:
    """Ask the user to confirm ``action`` (pauses the run)."""
    return str(interrupt({"confirm": action}))


async def test_an_interrupting_tool_is_not_turned_into_an_error(tmp_path: Path) -> None:
    h = make_harness(
        tmp_path,
        [{"tool_calls": [{"name": "confirm", "args": {"action": "paint"}}]}, "Done."],
        extra_tools=[confirm],
    )

    values = await h.run("paint the fence")

    assert [m.type for m in values["messages"]] == ["human", "ai"]
    assert await h.interrupts() == [{"confirm": "paint"}]
    values = await h.run(None, resume="yes")
    assert _shape(values["messages"])[2:] == [
        ("tool", ("call_0_0", "success", "yes")),
        ("ai", "Done."),
    ]
