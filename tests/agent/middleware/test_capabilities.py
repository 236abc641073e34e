"""Per-run tool visibility: plan mode's todo list, and images for vision models only."""

from __future__ import annotations

import base64
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from fawn.agent.prompts import PLAN_MODE_PROMPT
from tests.agent.middleware.harness import make_harness

TODOS = {"todos": [{"content": "Write the report", "status": "in_progress"}]}
WRITE_TODOS = {"tool_calls": [{"name": "write_todos", "args": TODOS}]}
IMAGE = "/mnt/user-data/workspace/dot.png"
VIEW_IMAGE = {"tool_calls": [{"name": "view_image", "args": {"image_path": IMAGE}}]}
# A 1x1 PNG.
DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def _system_prompt(messages: list[object]) -> str:
    first = messages[0]
    assert isinstance(first, SystemMessage)
    return first.text


async def test_write_todos_is_offered_in_plan_mode_only(tmp_path: Path) -> None:
    h = make_harness(tmp_path, ["ok"])

    await h.run("plan a trip", is_plan_mode=False)
    outside = list(h.model().bound_tool_names)
    outside_prompt = _system_prompt(h.recorder.calls[-1])
    await h.run("plan a trip", thread_id="t2", is_plan_mode=True)
    inside = list(h.model().bound_tool_names)

    assert "write_todos" not in outside
    assert "write_todos" in inside
    assert set(inside) - set(outside) == {"write_todos"}
    assert PLAN_MODE_PROMPT not in outside_prompt
    # the plan-mode instructions close the static prompt; the turn's reminder follows them
    static, reminder = _system_prompt(h.recorder.calls[-1]).split("\n\n<system-reminder>")
    assert static.endswith(PLAN_MODE_PROMPT)
    assert reminder.startswith("\n<current_date>")


async def test_write_todos_runs_in_plan_mode_and_is_refused_outside(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [WRITE_TODOS, "done"])

    planned = await h.run("plan", is_plan_mode=True)
    refused = await h.run("plan", thread_id="t2", is_plan_mode=False)

    assert planned["todos"] == TODOS["todos"]
    assert refused.get("todos") is None
    result = refused["messages"][2]
    assert isinstance(result, ToolMessage)
    assert (result.status, result.text) == (
        "error",
        "Error: write_todos is not available in this run: it is offered in plan mode only",
    )


async def test_a_viewed_image_is_shown_to_one_model_call_and_never_stored(
    tmp_path: Path,
) -> None:
    h = make_harness(tmp_path, [VIEW_IMAGE, "A single dot."], main={"supports_vision": True})
    (h.workspace_dir() / "dot.png").write_bytes(DOT_PNG)
    encoded = base64.b64encode(DOT_PNG).decode()

    values = await h.run("what is in dot.png?")

    assert "view_image" in h.model().bound_tool_names
    first_call, second_call = h.recorder.calls
    shown = second_call[-1]
    assert isinstance(shown, HumanMessage)
    assert shown.content == [
        {
            "type": "text",
            "text": "The images you viewed with view_image (shown for this step only):",
        },
        {"type": "text", "text": f"- {IMAGE}"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
    ]
    assert [m.type for m in first_call] == ["system", "human"]
    assert [m.type for m in second_call] == ["system", "human", "ai", "tool", "human"]
    assert values["viewed_images"] == {}
    assert [m.type for m in values["messages"]] == ["human", "ai", "tool", "ai"]
    # No checkpoint (values or pending writes) ever held the pixels; the scan itself works.
    stored = repr((h.saver.storage, h.saver.blobs, h.saver.writes))
    assert "what is in dot.png?" in stored
    assert encoded not in stored
    async for snapshot in h.agent.graph.aget_state_history(h._config("t1")):
        assert encoded not in repr(snapshot.values)


async def test_models_without_vision_neither_see_nor_run_view_image(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [VIEW_IMAGE, "I cannot look at images."])
    (h.workspace_dir() / "dot.png").write_bytes(DOT_PNG)

    values = await h.run("what is in dot.png?")

    assert "view_image" not in h.model().bound_tool_names
    result = values["messages"][2]
    assert isinstance(result, ToolMessage)
    assert result.status == "error"
    assert "does not accept images" in result.text
    assert values.get("viewed_images") in (None, {})
    assert isinstance(values["messages"][-1], AIMessage)
    assert all(isinstance(m.content, str) for m in h.recorder.calls[-1])
