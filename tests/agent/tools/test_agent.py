"""The tools inside a real agent (create_agent + ThreadState + RunContext + a checkpointer),
driven by a scripted model."""

from __future__ import annotations

import base64
import secrets
import uuid
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from fawn.agent.context import RunContext
from fawn.sandbox import LocalSandboxProvider
from tests.agent.tools.conftest import requires_bwrap
from tests.agent.tools.helpers import ToolBench, build_agent, call, tool_messages

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"


class Conversation:
    """One thread of an agent: run it, resume it, read its state and tool results."""

    def __init__(self, provider: LocalSandboxProvider, turns: list[Any], thread: str) -> None:
        self.graph = build_agent(provider, turns)
        self.thread = thread
        self.config: RunnableConfig = {"configurable": {"thread_id": thread}}

    async def run(self, payload: Any = None) -> dict[str, Any]:
        if payload is None:
            payload = {"messages": [HumanMessage("go")]}
        context = RunContext(thread_id=self.thread, run_id=str(uuid.uuid4()))
        result = await self.graph.ainvoke(payload, self.config, context=context)
        assert isinstance(result, dict)
        return result

    async def values(self) -> dict[str, Any]:
        return dict((await self.graph.aget_state(self.config)).values)

    async def results(self, bench: ToolBench) -> list[ToolMessage]:
        messages = tool_messages((await self.values())["messages"])
        for message in messages:
            bench.assert_no_host_path(str(message.content))
        return messages


def contents(messages: list[ToolMessage]) -> list[tuple[str | None, str, str]]:
    return [(m.name, m.status, str(m.content)) for m in messages]


@requires_bwrap
async def test_shell_and_file_tools_round_trip(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    turns = [
        {"tool_calls": [call("bash", description="make", command="echo hello world > hello.txt")]},
        {"tool_calls": [call("read_file", description="read", path=f"{WS}/hello.txt")]},
        {"tool_calls": [call("str_replace", description="edit", path=f"{WS}/hello.txt",
                             old_str="hello", new_str="goodbye")]},
        {"tool_calls": [call("write_file", description="add", path=f"{WS}/hello.txt",
                             content="second line\n", append=True)]},
        {"tool_calls": [
            call("glob", description="find", pattern="**/*.txt", path=WS),
            call("grep", description="search", pattern="GOODBYE", path=WS),
            call("ls", description="list", path=WS),
        ]},
        {"tool_calls": [call("str_replace", description="edit", path=f"{WS}/hello.txt",
                             old_str="absent", new_str="x")]},
        "All done.",
    ]  # fmt: skip
    conversation = Conversation(provider, turns, "thread-a")
    final = await conversation.run()
    assert final["messages"][-1].content == "All done."
    assert contents(await conversation.results(bench)) == [
        ("bash", "success", "(no output)"),
        ("read_file", "success", "hello world\n"),
        ("str_replace", "success", f"Replaced 1 occurrence in {WS}/hello.txt"),
        ("write_file", "success", f"Appended 12 characters to {WS}/hello.txt"),
        ("glob", "success", f"{WS}/hello.txt"),
        ("grep", "success", f"{WS}/hello.txt:1: goodbye world"),
        ("ls", "success", f"{WS}/hello.txt"),
        ("str_replace", "error", f"Error: old_str was not found in {WS}/hello.txt. It must match "
         "the file exactly, including whitespace and indentation: read the file and copy the text"),
    ]  # fmt: skip
    assert (bench.workspace() / "hello.txt").read_text() == "goodbye world\nsecond line\n"


async def test_present_files_makes_artifacts(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    turns = [
        {"tool_calls": [call("write_file", description="w", path=f"{OUT}/report.md", content="# R\n")]},
        {"tool_calls": [call("present_files", filepaths=[f"{OUT}/report.md"])]},
        {"tool_calls": [call("present_files", filepaths=[f"{OUT}/report.md"])]},
        "Here is your report.",
    ]  # fmt: skip
    conversation = Conversation(provider, turns, "thread-a")
    await conversation.run()
    values = await conversation.values()
    assert values["artifacts"] == [f"{OUT}/report.md"]
    assert (
        contents((await conversation.results(bench))[1:])
        == [
            ("present_files", "success", f"Presented 1 file to the user: {OUT}/report.md"),
        ]
        * 2
    )


async def test_present_files_outside_outputs_adds_nothing(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    (bench.workspace() / "draft.md").write_text("draft\n")
    (bench.outputs() / "final.md").write_text("final\n")
    turns = [
        {"tool_calls": [call("present_files", filepaths=[f"{WS}/draft.md"])]},
        {"tool_calls": [call("present_files", filepaths=[f"{OUT}/final.md", f"{WS}/draft.md"])]},
        "Sorry.",
    ]
    conversation = Conversation(provider, turns, "thread-a")
    await conversation.run()
    assert (await conversation.values()).get("artifacts", []) == []
    bad = f"- {WS}/draft.md: {WS}/draft.md is not in {OUT}; write or copy it there first"
    intro = (
        f"Error: nothing was presented. Only existing files in {OUT} can be presented; "
        "fix or drop these paths and call present_files again:\n"
    )
    assert contents(await conversation.results(bench)) == [
        ("present_files", "error", intro + bad),
        ("present_files", "error", intro + bad),
    ]


async def test_view_image_keeps_pixels_out_of_checkpoints(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    pixels = b"\x89PNG\r\n\x1a\n" + secrets.token_bytes(2048)
    (bench.workspace().parent / "uploads" / "photo.png").write_bytes(pixels)
    turns = [
        {"tool_calls": [call("view_image", image_path="/mnt/user-data/uploads/photo.png")]},
        "A photo.",
    ]
    conversation = Conversation(provider, turns, "thread-a")
    await conversation.run()
    values = await conversation.values()
    assert values["viewed_images"] == {
        "/mnt/user-data/uploads/photo.png": {"mime_type": "image/png", "size": len(pixels)}
    }
    assert contents(await conversation.results(bench)) == [
        ("view_image", "success", "Loaded image /mnt/user-data/uploads/photo.png (image/png, "
         f"{len(pixels)} bytes); it is shown to you with your next message."),
    ]  # fmt: skip

    encoded = base64.b64encode(pixels).decode()
    saver = conversation.graph.checkpointer
    checkpoints = [item async for item in saver.alist(None)]  # type: ignore[union-attr]
    assert checkpoints
    assert encoded[:64] not in repr(checkpoints)
    for blob in _stored_bytes(saver):
        assert encoded[:64].encode() not in blob
        assert pixels[8:72] not in blob


def _stored_bytes(saver: Any) -> list[bytes]:
    """Every serialised value the in-memory checkpointer holds."""
    found: list[bytes] = []

    def visit(value: Any) -> None:
        if isinstance(value, bytes | bytearray):
            found.append(bytes(value))
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list | tuple):
            for item in value:
                visit(item)

    visit(saver.storage)
    visit(saver.writes)
    visit(saver.blobs)
    assert found
    return found


@pytest.mark.parametrize(
    ("args", "content", "structured"),
    [
        (
            {
                "question": "Which colour?",
                "clarification_type": "approach_choice",
                "context": "The chart needs one.",
                "options": ["red", " blue", "", "blue"],
            },
            "🔀 The chart needs one.\n\nWhich colour?\n\n  1. red\n  2. blue",
            {
                "context": "The chart needs one.",
                "input_mode": "choice_with_other",
                "options": [
                    {"id": "option-1", "label": "red", "value": "red"},
                    {"id": "option-2", "label": "blue", "value": "blue"},
                ],
            },
        ),
        (
            {"question": "Name?", "clarification_type": "missing_info"},
            "❓ Name?",
            {"context": None, "input_mode": "free_text"},
        ),
    ],
)
async def test_ask_clarification_writes_the_question_as_deerflow_does(
    provider: LocalSandboxProvider,
    bench: ToolBench,
    args: dict[str, Any],
    content: str,
    structured: dict[str, Any],
) -> None:
    """The tool only writes the question (the lead agent's middleware pauses on it)."""
    question = call("ask_clarification", "call_ask", **args)
    conversation = Conversation(provider, [{"tool_calls": [question]}, "Asked."], "thread-a")
    final = await conversation.run()
    assert final["messages"][-1].content == "Asked."
    [asked] = await conversation.results(bench)
    assert (asked.name, asked.status, asked.content, asked.tool_call_id) == (
        "ask_clarification",
        "success",
        content,
        "call_ask",
    )
    assert asked.artifact == {
        "human_input": {
            "version": 1,
            "kind": "human_input_request",
            "source": "ask_clarification",
            "request_id": "clarification:call_ask",
            "tool_call_id": "call_ask",
            "clarification_type": args["clarification_type"],
            "question": args["question"],
            **structured,
        },
        "clarification": {
            "type": "clarification",
            "context": None,
            "options": None,
            **args,
        },
    }


async def test_write_todos_puts_todos_in_state(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    todos = [
        {"content": "Read the data", "status": "completed"},
        {"content": "Draw the chart", "status": "in_progress"},
        {"content": "Write the summary", "status": "pending"},
    ]
    turns = [
        {"tool_calls": [call("write_todos", todos=todos)]},
        {"tool_calls": [call("write_todos", todos=[{"content": "x", "status": "done"}])]},
        "Planned.",
    ]
    conversation = Conversation(provider, turns, "thread-a")
    await conversation.run()
    assert (await conversation.values())["todos"] == todos
    first, invalid = await conversation.results(bench)
    assert (first.name, first.status, first.content) == (
        "write_todos",
        "success",
        "Updated the todo list:\n- [completed] Read the data\n- [in_progress] Draw the chart\n"
        "- [pending] Write the summary",
    )
    assert invalid.status == "error"
    assert "status" in str(invalid.content)
    assert "'pending', 'in_progress' or 'completed'" in str(invalid.content)


@requires_bwrap
async def test_containment_through_the_agent_never_shows_host_paths(
    provider: LocalSandboxProvider, bench: ToolBench
) -> None:
    (bench.workspace("thread-b") / "secret.txt").write_text("b's secret\n")
    turns = [
        {"tool_calls": [
            call("read_file", description="d", path="../../../etc/passwd"),
            call("read_file", description="d", path="/etc/passwd"),
            call("bash", description="d", command="ln -s /etc etc && cat /etc/shadow; ls /root"),
            call("write_file", description="d", path="/mnt/skills/x.md", content="x"),
            call("read_file", description="d", path="/mnt/user-data/../../thread-b/secret.txt"),
            call("bash", description="d", command="cat /proc/self/mountinfo"),
        ]},
        {"tool_calls": [
            call("read_file", description="d", path=f"{WS}/etc/passwd"),
            call("grep", description="d", pattern="root|secret", path="/mnt/user-data"),
        ]},
        "Contained.",
    ]  # fmt: skip
    conversation = Conversation(provider, turns, "thread-a")
    await conversation.run()
    results = await conversation.results(bench)  # asserts no host path in any of them
    statuses = [(m.name, m.status) for m in results]
    assert statuses == [
        ("read_file", "error"),
        ("read_file", "error"),
        ("bash", "success"),
        ("write_file", "error"),
        ("read_file", "error"),
        ("bash", "success"),
        ("read_file", "error"),
        ("grep", "success"),
    ]
    assert results[2].content == (
        "cat: /etc/shadow: No such file or directory\n"
        "ls: cannot access '/root': No such file or directory\n[exit code 2]"
    )
    assert results[3].content == "Error: /mnt/skills/x.md is read-only"
    assert results[6].content == (f"Error: {WS}/etc/passwd resolves to a location outside {WS}")
    assert results[7].content == "No matches for 'root|secret' under /mnt/user-data"
