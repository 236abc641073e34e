"""Loop detection: the same tool calls over and over are warned about, then stopped.

A model turn's *call set* is its tool calls' names and arguments. Within the current turn
(since the last human message), once a call set has been made ``loop_warn_after`` times the
next model calls see a warning (added to that call's request only); when it is made for the
``loop_stop_after``-th time, the AI message is replaced, under the same id, by a final answer
without tool calls that carries ``additional_kwargs["fawn_stop_reason"] = "loop_capped"``
(the run worker records it as the run's stop reason), and the agent jumps to its end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse, hook_config
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import last_human_index, run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

log = logging.getLogger(__name__)

LOOP_CAPPED = "loop_capped"

CallSet = tuple[tuple[str, str], ...]


def call_set(message: AIMessage) -> CallSet:
    return tuple(
        sorted(
            (call["name"], json.dumps(call["args"], sort_keys=True, default=str))
            for call in message.tool_calls
        )
    )


def repeats(messages: Sequence[AnyMessage]) -> tuple[CallSet, int]:
    """The current turn's latest call set and how many of its AI messages made it."""
    start = last_human_index(messages)
    turn = [m for m in messages[(start or 0) :] if isinstance(m, AIMessage) and m.tool_calls]
    if not turn:
        return (), 0
    latest = call_set(turn[-1])
    return latest, sum(call_set(m) == latest for m in turn)


def _names(calls: CallSet) -> str:
    return ", ".join(sorted({name for name, _ in calls}))


class LoopDetectionMiddleware(ChainMiddleware):
    placement = Placement(
        name="loop_detection", stage=Stage.CONTROL, after=frozenset({"model_error_handling"})
    )

    def __init__(self, *, warn_after: int, stop_after: int) -> None:
        super().__init__()
        if stop_after <= warn_after:
            raise ValueError("stop_after must be greater than warn_after")
        self._warn_after = warn_after
        self._stop_after = stop_after

    def _warned(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        calls, count = repeats(request.messages)
        if count < self._warn_after:
            return request
        log.warning(
            "run %s: the same tool calls (%s) made %d times; warning the model",
            run_context(request.runtime).run_id,
            _names(calls),
            count,
        )
        warning = HumanMessage(
            content=(
                f"[loop warning] You have made the same tool calls ({_names(calls)}) with the "
                f"same arguments {count} times in this turn. Repeating them will not give a "
                "different result: use what you already have, try a different approach, or "
                f"answer the user. At {self._stop_after} repetitions the run is stopped."
            )
        )
        return request.override(messages=[*request.messages, warning])

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._warned(request))

    @hook_config(can_jump_to=["end"])
    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or not last.tool_calls:
            return None
        calls, count = repeats(messages)
        if count < self._stop_after:
            return None
        log.warning(
            "run %s: the same tool calls (%s) made %d times; stopping the run",
            run_context(runtime).run_id,
            _names(calls),
            count,
        )
        notice = (
            f"I stopped because I was repeating the same tool calls ({_names(calls)}) "
            f"without making progress ({count} times)."
        )
        stopped = AIMessage(
            id=last.id,
            content=f"{last.text}\n\n{notice}" if last.text else notice,
            additional_kwargs={
                **{k: v for k, v in last.additional_kwargs.items() if k != "tool_calls"},
                "fawn_stop_reason": LOOP_CAPPED,
            },
            response_metadata=last.response_metadata,
            usage_metadata=last.usage_metadata,
        )
        return {"messages": [stopped], "jump_to": "end"}
