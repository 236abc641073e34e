"""Tool policy: the tools the run's user may use (``auth.policy.<role>.tools``), enforced a
second time inside the agent after admission checked the model.

A tool outside ``RunContext.allowed_tools`` is not bound for the model call (the model never
sees it), and a call naming one anyway (a model that guesses names, a replayed message) is
refused with an error result instead of running. ``None`` allows every tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context, tool_name
from fawn.agent.middleware._visibility import refusal, without_tools
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

ToolResult = ToolMessage | Command[Any]


class ToolPolicyMiddleware(ChainMiddleware):
    # Inside the error boundaries, like the other per-run tool gates: a refusal is an
    # ordinary tool result, not an error to retry.
    placement = Placement(
        name="tool_policy", stage=Stage.CAPABILITIES, after=frozenset({"model_error_handling"})
    )

    def _visible(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        allowed = run_context(request.runtime).allowed_tools
        if allowed is None:
            return request
        hidden = {name for tool in request.tools if (name := tool_name(tool)) not in allowed}
        return without_tools(request, {h for h in hidden if h is not None})

    def _refused(self, request: ToolCallRequest) -> ToolMessage | None:
        allowed = run_context(request.runtime).allowed_tools
        if allowed is None or request.tool_call["name"] in allowed:
            return None
        return refusal(request, "your role may not use it (auth.policy)")

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._visible(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        return self._refused(request) or await handler(request)
