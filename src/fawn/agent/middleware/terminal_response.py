"""Terminal response: an empty final answer is asked for again once, then marked.

A model sometimes ends a turn with nothing: no text and no tool call (often right after a
tool result). The user would see a blank answer and the run would look successful. The
call is repeated once with the empty answer shown back (as a placeholder: strict providers
refuse an empty assistant message) and a nudge; if the answer is still empty it is
replaced, same id, by a clear notice with ``additional_kwargs["fawn_stop_reason"] =
"empty_response"``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import (
    answer_of,
    final_answer,
    has_visible_text,
    replace_answer,
)
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

log = logging.getLogger(__name__)

EMPTY_RESPONSE = "empty_response"
PLACEHOLDER = "(empty response)"
NUDGE = (
    "[system reminder] Your last response was empty. Using the results already in the "
    "conversation, write a short final answer for the user now. Call a tool only if the "
    "task cannot be finished without it."
)
NOTICE = "[The model returned an empty answer, also after one retry. Please try again.]"


def is_empty(answer: AIMessage) -> bool:
    if answer.tool_calls or answer.invalid_tool_calls or has_visible_text(answer):
        return False
    kwargs = answer.additional_kwargs
    return "fawn_error" not in kwargs and "fawn_stop_reason" not in kwargs


class TerminalResponseMiddleware(ChainMiddleware):
    placement = Placement(
        name="terminal_response", stage=Stage.CONTROL, after=frozenset({"loop_detection"})
    )

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        response = await handler(request)
        answer = answer_of(response)
        if answer is None or not is_empty(answer):
            return response
        run_id = run_context(request.runtime).run_id
        log.warning("run %s: empty model answer; asking once more", run_id)
        retry = request.override(
            messages=[
                *request.messages,
                AIMessage(content=PLACEHOLDER),
                HumanMessage(content=NUDGE),
            ]
        )
        second = await handler(retry)
        again = answer_of(second)
        if again is None or not is_empty(again):
            return second
        log.warning("run %s: empty model answer after the retry", run_id)
        return replace_answer(second, final_answer(again, NOTICE, fawn_stop_reason=EMPTY_RESPONSE))
