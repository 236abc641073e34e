"""Tool output budget: a long tool result goes to a file; the model reads an excerpt.

A result longer than ``controls.tool_output_max_chars`` is written in full to
:data:`TOOL_OUTPUT_DIR` (inside the thread's workspace, so the agent can page through it
with ``read_file``/``grep``/``bash``) and the model gets its head and tail with the path.
The directory is the framework's cache, not a deliverable: workspace change detection and
the file listings skip ``/mnt/user-data/workspace/.fawn``. Reading a saved output back is
not saved again.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable

from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import ToolMessage

from fawn.agent.middleware._results import ToolResult, result_message, with_message
from fawn.agent.middleware._shared import thread_sandbox
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.tools.hostfs import resolve, write_bytes
from fawn.agent.tools.names import READ_FILE
from fawn.config.settings import ControlSettings
from fawn.sandbox import VIRTUAL_WORKSPACE, PathPolicy, SandboxProvider

#: The framework's own files inside the workspace (never a deliverable).
INTERNAL_DIR = f"{VIRTUAL_WORKSPACE}/.fawn"
#: Where long tool results are saved, one file per call.
TOOL_OUTPUT_DIR = f"{INTERNAL_DIR}/tool-output"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def output_path(tool: str, call_id: str) -> str:
    """A fresh file name per call (call ids repeat across turns with some providers)."""
    stem = _UNSAFE.sub("_", f"{tool}-{call_id}")[:80]
    return f"{TOOL_OUTPUT_DIR}/{stem}-{uuid.uuid4().hex[:8]}.txt"


def excerpt(text: str, path: str, keep: int) -> str:
    head, tail = text[:keep], text[-keep:]
    return (
        f"{head}\n\n[... {len(text) - 2 * keep} of {len(text)} characters not shown. The whole "
        f"output is saved in {path}: read it in parts with read_file (start_line/end_line) "
        f"or search it with grep.]\n\n{tail}"
    )


def _save(policy: PathPolicy, path: str, text: str) -> None:
    write_bytes(resolve(policy, path, write=True), policy, text.encode("utf-8", "replace"))


class ToolOutputBudgetMiddleware(ChainMiddleware):
    # Inside error handling and sanitization: the model reads the excerpt, escaped.
    placement = Placement(
        name="tool_output_budget",
        stage=Stage.GUARDS,
        after=frozenset({"tool_result_sanitization"}),
    )

    def __init__(self, settings: ControlSettings, sandbox: SandboxProvider) -> None:
        super().__init__()
        self._max = settings.tool_output_max_chars
        self._keep = settings.tool_output_excerpt_chars
        self._sandbox = sandbox

    def _exempt(self, request: ToolCallRequest) -> bool:
        path = request.tool_call["args"].get("path")
        return (
            request.tool_call["name"] == READ_FILE
            and isinstance(path, str)
            and path.startswith(TOOL_OUTPUT_DIR)
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        result = await handler(request)
        message = result_message(result)
        if (
            message is None
            or not isinstance(message.content, str)
            or len(message.content) <= self._max
            or self._exempt(request)
        ):
            return result
        call = request.tool_call
        path = output_path(call["name"], str(call["id"]))
        sandbox = await thread_sandbox(self._sandbox, request.state, request.runtime)
        await asyncio.to_thread(_save, sandbox.policy, path, message.content)
        short = excerpt(message.content, path, self._keep)

        def shortened(m: ToolMessage) -> ToolMessage:
            return m.model_copy(update={"content": short})

        return with_message(result, shortened)
