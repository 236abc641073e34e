"""The tool policy inside the agent: a tool the user's role may not use is neither shown to
the model nor run when a call names it anyway."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import ToolMessage

from tests.agent.middleware.harness import make_harness

LS = {"tool_calls": [{"name": "ls", "args": {"description": "look", "path": "/mnt/user-data"}}]}
BASH = {"tool_calls": [{"name": "bash", "args": {"description": "x", "command": "echo owned"}}]}


async def test_tools_outside_the_policy_are_not_shown(tmp_path: Path) -> None:
    h = make_harness(tmp_path, ["ok", "ok"])
    await h.run("hi")
    everything = set(h.model().bound_tool_names)
    await h.run("hi", thread_id="t2", allowed_tools=frozenset({"ls", "read_file"}))
    assert set(h.model().bound_tool_names) == {"ls", "read_file"}
    assert {"bash", "write_file", "ls", "read_file"} <= everything


async def test_a_call_naming_a_forbidden_tool_is_refused(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [BASH, LS, "done"])
    values = await h.run("do it", allowed_tools=frozenset({"ls"}))
    refused, listed = values["messages"][2], values["messages"][4]
    assert isinstance(refused, ToolMessage) and isinstance(listed, ToolMessage)
    assert (refused.name, refused.status, refused.text) == (
        "bash",
        "error",
        "Error: bash is not available in this run: your role may not use it (auth.policy)",
    )
    assert listed.status == "success"
    results = [m.text for m in values["messages"] if isinstance(m, ToolMessage)]
    assert not any("owned" in text for text in results)  # bash never ran


async def test_no_policy_allows_every_tool(tmp_path: Path) -> None:
    h = make_harness(tmp_path, [LS, "done"])
    values = await h.run("look", allowed_tools=None)
    assert values["messages"][2].status == "success"
