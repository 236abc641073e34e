"""Todo list: plan mode's ``write_todos`` and its prompt, for plan-mode runs only.

The graph is compiled once, so plan mode is a per-run decision read from
``runtime.context.is_plan_mode``: outside plan mode the plan tools are not bound for the
model call and refused if called; in plan mode the system prompt gains the plan-mode
instructions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware._visibility import refusal, without_tools
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

ToolResult = ToolMessage | Command[Any]


def with_prompt(request: ModelRequest[RunContext], addition: str) -> ModelRequest[RunContext]:
    current = request.system_message
    text = addition if current is None else f"{current.text}\n\n{addition}"
    return request.override(system_message=SystemMessage(content=text))


class TodoListMiddleware(ChainMiddleware):
    placement = Placement(
        name="todo_list", stage=Stage.CAPABILITIES, after=frozenset({"model_error_handling"})
    )

    def __init__(self, *, plan_tools: frozenset[str], plan_prompt: str) -> None:
        super().__init__()
        self._plan_tools = plan_tools
        self._plan_prompt = plan_prompt

    def _request(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        if run_context(request.runtime).is_plan_mode:
            return with_prompt(request, self._plan_prompt)
        return without_tools(request, self._plan_tools)

    def _refused(self, request: ToolCallRequest) -> ToolMessage | None:
        if request.tool_call["name"] not in self._plan_tools:
            return None
        if run_context(request.runtime).is_plan_mode:
            return None
        return refusal(request, "it is offered in plan mode only")

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._request(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        return self._refused(request) or await handler(request)
