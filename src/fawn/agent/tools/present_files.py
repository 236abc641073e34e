"""``present_files``: make files in ``/mnt/user-data/outputs`` the thread's artifacts."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

from fawn.agent.tools.access import RunToolRuntime, thread_sandbox, tool_call_id
from fawn.agent.tools.errors import InvalidToolInput, NotPresentable, ToolError
from fawn.agent.tools.hostfs import read_head, resolve
from fawn.agent.tools.names import PRESENT_FILES
from fawn.sandbox import VIRTUAL_OUTPUTS, PathPolicy, SandboxError, SandboxProvider


def _presentable(policy: PathPolicy, path: str) -> str:
    """The normalised virtual path of ``path`` if it is an existing regular file in outputs."""
    target = resolve(policy, path)
    if not target.virtual.startswith(VIRTUAL_OUTPUTS + "/"):
        raise NotPresentable(
            f"{target.virtual} is not in {VIRTUAL_OUTPUTS}; write or copy it there first"
        )
    read_head(target, policy, 0)  # exists, and is a regular file
    return target.virtual


def presentable_paths(policy: PathPolicy, filepaths: list[str]) -> list[str]:
    """All of ``filepaths``, normalised and de-duplicated, or an error naming each bad one.

    All or nothing: one bad path rejects the whole call, so no partial artifact set is left.
    """
    if not filepaths:
        raise InvalidToolInput(
            f"filepaths is empty; list the files in {VIRTUAL_OUTPUTS} to present"
        )
    accepted: list[str] = []
    problems: list[str] = []
    for path in filepaths:
        try:
            accepted.append(_presentable(policy, path))
        except (ToolError, SandboxError) as error:
            problems.append(f"- {policy.mask(path)}: {error}")
    if problems:
        raise NotPresentable(
            f"nothing was presented. Only existing files in {VIRTUAL_OUTPUTS} can be presented; "
            "fix or drop these paths and call present_files again:\n" + "\n".join(problems)
        )
    return list(dict.fromkeys(accepted))


def present_files_tool(provider: SandboxProvider) -> BaseTool:
    @tool(PRESENT_FILES, parse_docstring=True)
    async def present_files(filepaths: list[str], runtime: RunToolRuntime) -> Command[Any]:
        """Make files visible to the user for viewing, rendering and download in the client.

        Use it after creating files meant for the user (reports, charts, documents) in /mnt/user-data/outputs; several related files can be presented at once. Do not use it for files you only need for your own processing, or for intermediate files.

        Args:
            filepaths: Absolute paths of the files to present. **Only** files in /mnt/user-data/outputs can be presented.
        """
        policy = (await thread_sandbox(provider, runtime)).policy
        paths = await asyncio.to_thread(presentable_paths, policy, filepaths)
        noun = "file" if len(paths) == 1 else "files"
        message = ToolMessage(
            f"Presented {len(paths)} {noun} to the user: {', '.join(paths)}",
            tool_call_id=tool_call_id(runtime),
            name=PRESENT_FILES,
        )
        return Command(update={"artifacts": paths, "messages": [message]})

    return present_files
