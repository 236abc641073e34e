"""Finish reasons: a model that stopped for length or safety does not pass for a clean answer.

Providers say why generation stopped (OpenAI ``finish_reason``, Anthropic ``stop_reason``,
Gemini ``finish_reason``). When the model hit its output limit the answer is cut short, and
tool calls in it may carry truncated arguments (half a file for ``write_file``); when a
safety filter stopped it, the answer may be empty or partial. Either way the message is
kept (same id, for the record), its tool calls are not executed, and
``additional_kwargs["fawn_stop_reason"]`` says ``model_length_capped`` or ``safety_capped``:
the run worker records that as the run's stop reason, and the run ends there.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware import hook_config
from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import final_answer, has_visible_text
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

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
    # After the loop and budget checks (and the capability stage's sub-agent limit): its
    # after_model runs before theirs, so they count the answer as it stands once capped.
    placement = Placement(
        name="finish_reasons",
        stage=Stage.CONTROL,
        after=frozenset({"loop_detection", "token_budget"}),
    )

    @hook_config(can_jump_to=["end"])
    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or "fawn_stop_reason" in last.additional_kwargs:
            return None
        stop_reason = capped_reason(last)
        if stop_reason is None:
            return None
        log.warning(
            "run %s: the model stopped with finish reason %r (%s)",
            run_context(runtime).run_id,
            provider_finish_reason(last),
            stop_reason,
        )
        return {"messages": [_marked(last, stop_reason)], "jump_to": "end"}
