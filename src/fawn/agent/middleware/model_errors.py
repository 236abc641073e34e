"""Model error handling: bounded retry, then a marked error message.

A failed model call is retried ``agent.model_retries`` times (with a short exponential
backoff) when the failure may be transient. If it still fails, the call answers with an
``AIMessage`` carrying ``additional_kwargs["fawn_error"] = {"error", "message"}``: the
conversation stays well-formed, and the run worker maps the marker, never the prose, to the
run status ``error``. Cancellation and LangGraph interrupts pass through untouched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import is_control_flow
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying; other 4xx are the request's fault and fail the same again.
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` may succeed on a retry (explicit ``retryable`` or an HTTP status)."""
    flag = getattr(exc, "retryable", None)
    if isinstance(flag, bool):
        return flag
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int) and 400 <= status < 500:
        return status in _RETRYABLE_STATUS
    return True


def error_message(exc: BaseException) -> AIMessage:
    text = str(exc) or type(exc).__name__
    return AIMessage(
        content=f"The model call failed: {text}",
        additional_kwargs={"fawn_error": {"error": type(exc).__name__, "message": text}},
    )


def _run_id(request: ModelRequest[RunContext]) -> str | None:
    context = request.runtime.context if request.runtime is not None else None
    return context.run_id if context is not None else None


class ModelErrorMiddleware(ChainMiddleware):
    placement = Placement(name="model_error_handling", stage=Stage.GUARDS)

    def __init__(self, *, retries: int, backoff_seconds: float = 1.0) -> None:
        super().__init__()
        self._retries = retries
        self._backoff = backoff_seconds

    def _give_up(self, request: ModelRequest[RunContext], exc: Exception, attempt: int) -> bool:
        final = attempt >= self._retries or not is_retryable(exc)
        log.warning(
            "run %s: model call failed (attempt %d/%d%s): %s",
            _run_id(request),
            attempt + 1,
            self._retries + 1,
            ", giving up" if final else "",
            exc,
        )
        return final

    def _delay(self, attempt: int) -> float:
        return float(min(self._backoff * 2**attempt, 30.0))

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage:
        attempt = 0
        while True:
            try:
                return await handler(request)
            except Exception as exc:
                if is_control_flow(exc):
                    raise
                if self._give_up(request, exc, attempt):
                    return error_message(exc)
            await asyncio.sleep(self._delay(attempt))
            attempt += 1
