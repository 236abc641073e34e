"""Tool error handling: a failing tool becomes an error result the model can read.

Tools raise on errors; any exception becomes ``ToolMessage(content="Error: ...",
status="error")`` for that call, so the model can correct itself and the run continues.
Cancellation, LangGraph interrupts (a tool calling ``interrupt()``) and invalid resume values are
control flow, not tool errors: they are re-raised.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from fawn.agent.middleware._shared import is_control_flow
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

log = logging.getLogger(__name__)

ToolResult = ToolMessage | Command[Any]


def error_result(request: ToolCallRequest, exc: Exception) -> ToolMessage:
    call = request.tool_call
    context = getattr(request.runtime, "context", None)
    log.info(
        "run %s: tool %s failed: %s: %s",
        getattr(context, "run_id", None),
        call["name"],
        type(exc).__name__,
        exc,
    )
    return ToolMessage(
        content=f"Error: {str(exc) or type(exc).__name__}",
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )


class ToolErrorMiddleware(ChainMiddleware):
    # Outside every other tool wrapper, so their failures are caught too.
    placement = Placement(
        name="tool_error_handling",
        stage=Stage.GUARDS,
        before=frozenset({"todo_list", "view_image"}),
    )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        try:
            return await handler(request)
        except Exception as exc:
            if is_control_flow(exc):
                raise
            return error_result(request, exc)
