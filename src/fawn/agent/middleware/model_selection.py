"""Model selection: the run's ``model_name``/``thinking_enabled``/``reasoning_effort`` pick the
chat model for each call, so one compiled graph serves every run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

from fawn.agent.context import RunContext
from fawn.agent.models import ModelFactory


class ModelSelectionMiddleware(AgentMiddleware[Any, RunContext]):
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
