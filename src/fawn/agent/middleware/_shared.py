"""Small helpers the middleware modules share: the run context, control-flow exceptions,
message positions and tool names."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.errors import GraphBubbleUp, is_invalid_resume

from fawn.agent.context import RunContext
from fawn.agent.errors import AgentError
from fawn.agent.state import ThreadState
from fawn.sandbox.base import Sandbox, SandboxProvider


class MissingRunContext(AgentError):
    code = "missing_run_context"

    def __init__(self) -> None:
        super().__init__(
            "the lead agent needs a RunContext: invoke it with context=RunContext(...)"
        )


def run_context(runtime: object) -> RunContext:
    """The run's context from a node's ``Runtime`` or a tool call's ``ToolRuntime``.

    The graph is always invoked with one (the run worker sets it).
    """
    context = getattr(runtime, "context", None)
    if not isinstance(context, RunContext):
        raise MissingRunContext()
    return context


async def thread_sandbox(provider: SandboxProvider, state: ThreadState, runtime: object) -> Sandbox:
    """The sandbox bound to the thread in state, else the thread's (acquired now).

    A bound id is trusted only when that sandbox belongs to the run's own thread: state can
    be copied or written, and another thread's sandbox must never be reachable through it.
    """
    thread_id = run_context(runtime).thread_id
    bound = (state.get("sandbox") or {}).get("sandbox_id")
    sandbox = provider.get(bound) if bound else None
    if sandbox is not None and sandbox.paths.thread_id == thread_id:
        return sandbox
    return await provider.acquire(thread_id)


def is_control_flow(exc: BaseException) -> bool:
    """Exceptions no error handler may turn into a result: cancellation, LangGraph's
    interrupts/bubble-ups, and a resume value the interrupt's schema rejected."""
    return isinstance(exc, asyncio.CancelledError | GraphBubbleUp) or is_invalid_resume(exc)


def last_human_index(messages: Sequence[AnyMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    return None


def last_ai_index(messages: Sequence[AnyMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            return index
    return None


def tool_name(tool: Any) -> str | None:
    """The name of a tool as ``ModelRequest.tools`` holds it (a BaseTool or a dict)."""
    name = getattr(tool, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(tool.get("name"), str):
            return str(tool["name"])
    return None
