"""Turn limit (sub-agents): a sub-agent answers once it has made ``max_turns`` model calls.

When the model's ``max_turns``-th answer still calls tools, the calls are dropped and the
answer (same id) ends the sub-agent with ``additional_kwargs["fawn_stop_reason"] =
"turn_capped"``; the ``task`` result then says the sub-agent was capped.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import hook_config
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import final_answer
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

TURN_CAPPED = "turn_capped"


class TurnLimitMiddleware(ChainMiddleware):
    placement = Placement(
        name="turn_limit", stage=Stage.CONTROL, after=frozenset({"loop_detection"})
    )

    def __init__(self, *, max_turns: int) -> None:
        super().__init__()
        self._max_turns = max_turns

    @hook_config(can_jump_to=["end"])
    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return None
        turns = sum(isinstance(m, AIMessage) for m in messages)
        if turns < self._max_turns:
            return None
        notice = f"[Stopped after {turns} model calls, the limit for this sub-agent.]"
        return {
            "messages": [final_answer(last, notice, fawn_stop_reason=TURN_CAPPED)],
            "jump_to": "end",
        }
