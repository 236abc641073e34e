"""Dangling tool call repair: every AI tool call has a result before the next model call.

A tool call can lose its result: the run was cancelled or interrupted before the tool ran,
or a tool paused the run and the user changed course by sending a new message instead of
resuming. (A clarification never dangles: its question is the call's result.) Providers reject a history with an unanswered call, so before each model call
the missing results are written, right after the calls' other results, as error
``ToolMessage``s saying the call was not executed. The repair is stored, so the thread's
history stays consistent for every later call and for clients reading it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

NOT_EXECUTED = "The call was not executed (interrupted or superseded by the user's next message)."


def repair(messages: list[AnyMessage]) -> list[AnyMessage] | None:
    """The history with a result for every unanswered call, or None if nothing is missing."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    repaired: list[AnyMessage] = []
    missing: list[ToolMessage] = []
    for message in messages:
        # Flush pending results once this AI message's own results have been passed.
        if missing and not isinstance(message, ToolMessage):
            repaired.extend(missing)
            missing = []
        repaired.append(message)
        if isinstance(message, AIMessage):
            missing = [
                ToolMessage(
                    content=NOT_EXECUTED,
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                )
                for call in message.tool_calls
                if call["id"] is not None and call["id"] not in answered
            ]
    repaired.extend(missing)
    return repaired if len(repaired) != len(messages) else None


class DanglingToolCallMiddleware(ChainMiddleware):
    placement = Placement(name="dangling_tool_call_repair", stage=Stage.HISTORY)

    async def abefore_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        repaired = repair(state["messages"])
        if repaired is None:
            return None
        # Results must sit right after their call, not at the end: rewrite the history.
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]}
