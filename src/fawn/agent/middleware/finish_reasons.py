"""Finish reasons: a model that stopped for length or safety does not pass for a clean answer.

Providers say why generation stopped (OpenAI ``finish_reason``, Anthropic ``stop_reason``,
Gemini ``finish_reason``). When the model hit its output limit the answer is cut short, and
tool calls in it may carry truncated arguments (half a file for ``write_file``); when a
safety filter stopped it, the answer may be empty or partial. Either way the message is
kept (same id, for the record), its tool calls are dropped before anything sees them, and
``additional_kwargs["fawn_stop_reason"]`` says ``model_length_capped`` or ``safety_capped``:
the run worker records that as the run's stop reason. With no tool calls left the answer is
final and the run ends there.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

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

MODEL_LENGTH_CAPPED = "model_length_capped"
SAFETY_CAPPED = "safety_capped"

_LENGTH = frozenset({"length", "max_tokens", "MAX_TOKENS"})
_SAFETY = frozenset(
    {"content_filter", "refusal", "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"}
)
_NOTICES = {
    MODEL_LENGTH_CAPPED: "[The model reached its output limit: this answer is cut short{calls}.]",
    SAFETY_CAPPED: "[The model provider's safety filter stopped this answer{calls}.]",
}


def provider_finish_reason(message: AIMessage) -> str | None:
    metadata = message.response_metadata or {}
    for key in ("finish_reason", "stop_reason"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def capped_reason(message: AIMessage) -> str | None:
    reason = provider_finish_reason(message)
    if reason in _LENGTH:
        return MODEL_LENGTH_CAPPED
    if reason in _SAFETY:
        return SAFETY_CAPPED
    return None


def _marked(message: AIMessage, stop_reason: str) -> AIMessage:
    calls = message.tool_calls or message.invalid_tool_calls
    if not calls and has_visible_text(message):
        kwargs = {**message.additional_kwargs, "fawn_stop_reason": stop_reason}
        return message.model_copy(update={"additional_kwargs": kwargs})
    names = ", ".join(sorted({str(c.get("name")) for c in calls}))
    detail = f"; its tool calls ({names}) were not run" if names else ""
    notice = _NOTICES[stop_reason].format(calls=detail)
    return final_answer(message, notice, fawn_stop_reason=stop_reason)


class FinishReasonMiddleware(ChainMiddleware):
    # Inside the other model-call wrappers: they see the answer once it is marked.
    placement = Placement(
        name="finish_reasons",
        stage=Stage.CONTROL,
        after=frozenset({"loop_detection", "token_budget"}),
    )

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        response = await handler(request)
        answer = answer_of(response)
        if answer is None or "fawn_stop_reason" in answer.additional_kwargs:
            return response
        stop_reason = capped_reason(answer)
        if stop_reason is None:
            return response
        log.warning(
            "run %s: the model stopped with finish reason %r (%s)",
            run_context(request.runtime).run_id,
            provider_finish_reason(answer),
            stop_reason,
        )
        return replace_answer(response, _marked(answer, stop_reason))
