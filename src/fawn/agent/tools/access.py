"""How a tool finds the run it works for and that thread's sandbox."""

from __future__ import annotations

from typing import Any

from langchain.tools import ToolRuntime

from fawn.agent.context import RunContext
from fawn.agent.tools.errors import ToolError
from fawn.sandbox import Sandbox, SandboxProvider

# The state type stays ``Any``: tools read the run context, never the state, and a concrete
# state type would have pydantic build a schema of the whole ThreadState for every tool.
RunToolRuntime = ToolRuntime[RunContext, Any]
"""The runtime LangGraph injects into a tool's ``runtime`` parameter."""


def run_context(runtime: RunToolRuntime) -> RunContext:
    """The run's context, which the graph receives as ``context=RunContext(...)``."""
    context = runtime.context
    if not isinstance(context, RunContext):
        raise ToolError(
            "this tool needs the run context (thread_id): invoke the graph with "
            "context=RunContext(...)"
        )
    return context


def tool_call_id(runtime: RunToolRuntime) -> str:
    """The id of the call being answered (for the ``ToolMessage`` of a ``Command``)."""
    if runtime.tool_call_id is None:
        raise ToolError("this tool must be called through a tool call (it has no tool_call_id)")
    return runtime.tool_call_id


async def thread_sandbox(provider: SandboxProvider, runtime: RunToolRuntime) -> Sandbox:
    """The sandbox of the run's thread (acquired on first use, the same one afterwards)."""
    return await provider.acquire(run_context(runtime).thread_id)
