"""Clarification: when the model asks the user, nothing else runs first.

``ask_clarification`` interrupts the run (a LangGraph ``interrupt()`` in the tool) until the
user answers. If the same AI message also calls other tools, they would run before the
question reaches the user, acting on assumptions the question exists to check. So this
middleware, last in the chain (its ``after_model`` runs first), keeps only the first
clarification call and drops its siblings, replacing the message under the same id.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

log = logging.getLogger(__name__)


def _content_without(content: Any, dropped_ids: set[str]) -> Any:
    """Provider content blocks for the dropped calls (e.g. Anthropic ``tool_use``) go too."""
    if not isinstance(content, list):
        return content
    return [
        part for part in content if not (isinstance(part, dict) and part.get("id") in dropped_ids)
    ]


def only_clarification(message: AIMessage, tool_name: str) -> AIMessage | None:
    """``message`` reduced to its first ``tool_name`` call, or None if nothing to drop."""
    asks = [call for call in message.tool_calls if call["name"] == tool_name]
    if not asks or len(message.tool_calls) == 1:
        return None
    kept = asks[0]
    dropped = {call["id"] for call in message.tool_calls if call is not kept and call["id"]}
    return message.model_copy(
        update={
            "tool_calls": [kept],
            "invalid_tool_calls": [],
            "content": _content_without(message.content, dropped),
            "additional_kwargs": {
                k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"
            },
        }
    )


class ClarificationMiddleware(ChainMiddleware):
    placement = Placement(
        name="clarification", stage=Stage.LAST, after=frozenset({"loop_detection"})
    )

    def __init__(self, *, tool_name: str) -> None:
        super().__init__()
        self._tool_name = tool_name

    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage):
            return None
        reduced = only_clarification(last, self._tool_name)
        if reduced is None:
            return None
        kept_id = reduced.tool_calls[0]["id"]
        dropped = [call["name"] for call in last.tool_calls if call["id"] != kept_id]
        log.info(
            "run %s: %s asked; dropped sibling calls %s",
            run_context(runtime).run_id,
            self._tool_name,
            dropped,
        )
        return {"messages": [reduced]}
