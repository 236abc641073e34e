"""Model selection: the run's ``model_name``/``thinking_enabled``/``reasoning_effort`` pick the
chat model for each call, so one compiled graph serves every run.

It is the outermost model-call wrapper: the model is chosen once per call, and the retries
of the model-error middleware inside it reuse that choice. Options the model does not
support are ignored; that is logged once per run, with the run id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.errors import AgentError
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.models import ModelFactory
from fawn.agent.state import ThreadState

log = logging.getLogger(__name__)


class ModelSelectionMiddleware(ChainMiddleware):
    placement = Placement(name="model_selection", stage=Stage.OUTERMOST)

    def __init__(self, models: ModelFactory) -> None:
        super().__init__()
        self._models = models

    def _select(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        ctx = request.runtime.context
        if ctx is None:
            return request.override(model=self._models.get(None))
        model = self._models.get(
            ctx.model_name,
            thinking_enabled=ctx.thinking_enabled,
            reasoning_effort=ctx.reasoning_effort,
        )
        return request.override(model=model)

    async def abefore_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        ctx = runtime.context
        if ctx is None or not (ctx.thinking_enabled or ctx.reasoning_effort):
            return None
        warnings: list[str] = []
        try:
            self._models.get(
                ctx.model_name,
                thinking_enabled=ctx.thinking_enabled,
                reasoning_effort=ctx.reasoning_effort,
                warnings=warnings,
            )
        except AgentError:  # the model call reports a bad model; here we only log options
            return None
        for warning in warnings:
            log.warning("run %s: %s", ctx.run_id, warning)
            ctx.notes.append(warning)
        return None

    def wrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        return handler(self._select(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._select(request))
