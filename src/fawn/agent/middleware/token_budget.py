"""Token budget: a run stops asking the model once it has used its tokens.

``controls.max_run_tokens`` caps the tokens (prompt + completion, as the provider reports
them) of one run, its sub-agents' included: they share the run's
:class:`fawn.agent.context.TokenMeter`. Past ``token_warn_fraction`` of the cap each model
call is told to wrap up. A call that crosses the cap keeps its text but loses its tool
calls; once the cap is reached no model is called again. Either way the final message
carries ``additional_kwargs["fawn_stop_reason"] = "token_capped"``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import answer_of, final_answer, replace_answer
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

log = logging.getLogger(__name__)

TOKEN_CAPPED = "token_capped"


def tokens_of(message: AIMessage) -> int:
    usage = message.usage_metadata
    if usage is None:
        return 0
    return int(usage.get("total_tokens") or usage["input_tokens"] + usage["output_tokens"])


class TokenBudgetMiddleware(ChainMiddleware):
    # Inside the terminal-response retry, so a retried call is counted too.
    placement = Placement(
        name="token_budget", stage=Stage.CONTROL, after=frozenset({"terminal_response"})
    )

    def __init__(self, *, max_run_tokens: int | None, warn_fraction: float) -> None:
        super().__init__()
        self._cap = max_run_tokens
        self._warn_at = None if max_run_tokens is None else int(max_run_tokens * warn_fraction)

    def _notice(self, used: int) -> str:
        return f"[Stopped: this run has used {used:,} tokens of its {self._cap:,}-token budget.]"

    def _warned(self, request: ModelRequest[RunContext], used: int) -> ModelRequest[RunContext]:
        if self._warn_at is None or used < self._warn_at:
            return request
        warning = HumanMessage(
            content=(
                f"[token budget] This run has used {used:,} of its {self._cap:,} tokens. Wrap "
                "up: answer with what you have and start no new work."
            )
        )
        return request.override(messages=[*request.messages, warning])

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        if self._cap is None:
            return await handler(request)
        context = run_context(request.runtime)
        meter = context.tokens
        if meter.used >= self._cap:
            log.warning("run %s: token budget spent (%d tokens)", context.run_id, meter.used)
            return AIMessage(
                content=self._notice(meter.used),
                additional_kwargs={"fawn_stop_reason": TOKEN_CAPPED},
            )
        response = await handler(self._warned(request, meter.used))
        answer = answer_of(response)
        if answer is None:
            return response
        used = meter.add(tokens_of(answer))
        if used < self._cap or not answer.tool_calls:
            return response
        log.warning("run %s: token budget reached (%d tokens)", context.run_id, used)
        capped = final_answer(answer, self._notice(used), fawn_stop_reason=TOKEN_CAPPED)
        return replace_answer(response, capped)
