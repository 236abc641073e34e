"""Read before write: an existing file is changed only by an agent that has seen it as it is.

``write_file`` and ``str_replace`` on a file that exists are refused unless the agent read
that file (``read_file``) or wrote it itself since it last changed: the thread's
``read_files`` channel keeps, per virtual path, the SHA-256 of the version the agent last
saw. A file changed meanwhile (by ``bash``, a sub-agent, the user's upload) has another
digest, and the write is refused with a message telling the model to read it first, so it
never overwrites work it has not seen. New files need no read.

Sub-agents keep their own ``read_files`` (their own state), so what a sub-agent read does
not count as read by the lead.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from fawn.agent.middleware._results import ToolResult, result_message
from fawn.agent.middleware._shared import thread_sandbox
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.tools.errors import ToolError
from fawn.agent.tools.files import MAX_TEXT_FILE_BYTES
from fawn.agent.tools.hostfs import read_bytes, resolve
from fawn.agent.tools.names import READ_FILE, STR_REPLACE, WRITE_FILE
from fawn.sandbox import PathPolicy, SandboxError, SandboxProvider

_WRITES = frozenset({WRITE_FILE, STR_REPLACE})


def current_version(policy: PathPolicy, path: str) -> tuple[str, str | None] | None:
    """``(virtual path, digest)`` of the file now (digest ``None``: it does not exist), or
    ``None`` when the path cannot be checked (outside the mounts, not a regular file, too
    large): the tool itself then reports what is wrong."""
    try:
        target = resolve(policy, path)
    except SandboxError:
        return None
    if not target.host.exists():
        return target.virtual, None
    try:
        data = read_bytes(target, policy, limit=MAX_TEXT_FILE_BYTES)
    except ToolError:
        return None
    return target.virtual, hashlib.sha256(data).hexdigest()


def _refusal(request: ToolCallRequest, virtual: str, seen: bool) -> ToolMessage:
    call = request.tool_call
    why = "has changed since you last read it" if seen else "exists and you have not read it"
    return ToolMessage(
        content=(
            f"Error: {virtual} {why}. Read it with read_file first, then make your change "
            "based on its current content."
        ),
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )


def _tracked(result: ToolResult, versions: dict[str, str]) -> ToolResult:
    message = result_message(result)
    if message is None or message.status == "error" or not versions:
        return result
    if isinstance(result, ToolMessage):
        return Command(update={"messages": [result], "read_files": versions})
    update = result.update if isinstance(result.update, dict) else {}
    return Command(update={**update, "read_files": {**update.get("read_files", {}), **versions}})


class ReadBeforeWriteMiddleware(ChainMiddleware):
    placement = Placement(
        name="read_before_write",
        stage=Stage.CAPABILITIES,
        after=frozenset({"model_error_handling"}),
    )

    def __init__(self, sandbox: SandboxProvider) -> None:
        super().__init__()
        self._sandbox = sandbox

    async def _version(self, request: ToolCallRequest) -> tuple[str, str | None] | None:
        path = request.tool_call["args"].get("path")
        if not isinstance(path, str):
            return None
        sandbox = await thread_sandbox(self._sandbox, request.state, request.runtime)
        return await asyncio.to_thread(current_version, sandbox.policy, path)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        name = request.tool_call["name"]
        if name not in _WRITES and name != READ_FILE:
            return await handler(request)
        if name in _WRITES:
            before = await self._version(request)
            if before is not None and before[1] is not None:
                known: dict[str, Any] = request.state.get("read_files") or {}
                if known.get(before[0]) != before[1]:
                    return _refusal(request, before[0], before[0] in known)
        result = await handler(request)
        after = await self._version(request)
        if after is None or after[1] is None:
            return result
        return _tracked(result, {after[0]: after[1]})
