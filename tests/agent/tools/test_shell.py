"""bash: commands in the real bubblewrap sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from fawn.agent.tools import build_tools
from fawn.agent.tools.shell import format_result
from fawn.config.settings import SandboxSettings
from fawn.sandbox import CommandResult, LocalSandboxProvider, SandboxUnavailable
from tests.agent.tools.conftest import requires_bwrap
from tests.agent.tools.helpers import ToolBench

pytestmark = requires_bwrap


async def test_bash_creates_a_file_that_read_file_reads(bench: ToolBench) -> None:
    out = await bench.text(
        "bash", description="d", command="mkdir -p out && echo made > out/made.txt && pwd"
    )
    assert out == "/mnt/user-data/workspace\n"
    assert (
        await bench.text("read_file", description="d", path="/mnt/user-data/workspace/out/made.txt")
        == "made\n"
    )


async def test_bash_reports_exit_codes_and_silence(bench: ToolBench) -> None:
    assert await bench.text("bash", description="d", command="echo oops; exit 3") == (
        "oops\n[exit code 3]"
    )
    assert await bench.text("bash", description="d", command="exit 2") == "[exit code 2]"
    assert await bench.text("bash", description="d", command="true") == "(no output)"


async def test_bash_timeout_is_reported(data_dir: Path) -> None:
    provider = LocalSandboxProvider(data_dir, SandboxSettings(timeout_seconds=0.5))
    bench = ToolBench(provider, data_dir)
    out = await bench.text("bash", description="d", command="echo start; sleep 30")
    assert out == "start\n[command timed out after 0.5 s and was killed]\n"


async def test_bash_without_bubblewrap_says_so(data_dir: Path) -> None:
    provider = LocalSandboxProvider(data_dir, SandboxSettings(bwrap_path="fawn-no-such-bwrap"))
    bench = ToolBench(provider, data_dir)
    error = await bench.error("bash", description="d", command="echo hi")
    assert isinstance(error, SandboxUnavailable)
    assert "bubblewrap (bwrap) is not installed" in str(error)


def test_format_result() -> None:
    assert format_result(CommandResult(0, "x\n")) == "x\n"
    assert format_result(CommandResult(1, "x\n")) == "x\n[exit code 1]"
    assert format_result(CommandResult(124, "x\n[timed out]\n", timed_out=True)) == (
        "x\n[timed out]\n"
    )


def test_build_tools_names_and_groups(provider: LocalSandboxProvider) -> None:
    from fawn.agent import tools

    names = [tool.name for tool in build_tools(provider)]
    assert names == [
        tools.BASH,
        tools.LS,
        tools.READ_FILE,
        tools.WRITE_FILE,
        tools.STR_REPLACE,
        tools.GLOB,
        tools.GREP,
        tools.PRESENT_FILES,
        tools.VIEW_IMAGE,
        tools.ASK_CLARIFICATION,
        tools.WRITE_TODOS,
    ]
    assert names == [
        "bash", "ls", "read_file", "write_file", "str_replace", "glob", "grep",
        "present_files", "view_image", "ask_clarification", "write_todos",
    ]  # fmt: skip
    assert {"write_todos"} == tools.PLAN_MODE_TOOLS
    assert {"view_image"} == tools.VISION_TOOLS
    assert set(names[:7]) == tools.SANDBOX_TOOLS


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("bash", ["description", "command"]),
        ("ls", ["description", "path"]),
        ("read_file", ["description", "path", "start_line", "end_line"]),
        ("write_file", ["description", "path", "content", "append"]),
        ("str_replace", ["description", "path", "old_str", "new_str", "replace_all"]),
        ("glob", ["description", "pattern", "path"]),
        ("grep", ["description", "pattern", "path", "glob", "literal", "case_sensitive"]),
        ("present_files", ["filepaths"]),
        ("view_image", ["image_path"]),
        ("ask_clarification", ["question", "clarification_type", "context", "options"]),
        ("write_todos", ["todos"]),
    ],
)
def test_model_facing_arguments_are_deerflows(
    provider: LocalSandboxProvider, name: str, arguments: list[str]
) -> None:
    tool = {tool.name: tool for tool in build_tools(provider)}[name]
    schema = convert_to_openai_tool(tool)["function"]["parameters"]
    assert list(schema["properties"]) == arguments
