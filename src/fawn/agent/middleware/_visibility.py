"""Per-run tool gating shared by the plan-mode and vision middleware.

A gated tool is both hidden from the model (not bound for the call) and refused if the model
calls it anyway: what the model may see and what may run are separate decisions.
"""

from __future__ import annotations

from collections.abc import Collection

from langchain.agents.middleware import ModelRequest, ToolCallRequest
from langchain_core.messages import ToolMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import tool_name


def without_tools(
    request: ModelRequest[RunContext], hidden: Collection[str]
) -> ModelRequest[RunContext]:
    kept = [tool for tool in request.tools if tool_name(tool) not in hidden]
    if len(kept) == len(request.tools):
        return request
    return request.override(tools=kept)


def refusal(request: ToolCallRequest, reason: str) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=f"Error: {call['name']} is not available in this run: {reason}",
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )
