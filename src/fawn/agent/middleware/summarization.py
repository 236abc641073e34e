"""Summarization: keep a long conversation inside the context window (off by default).

When ``summarization.enabled`` and the history passes ``trigger_tokens``, the older messages
are replaced by a summary written by the summarization model (``summarization.model_name``,
else the run's model), keeping the last ``keep_messages``. The work is LangChain's
``SummarizationMiddleware`` (it never splits a tool call from its result); this module only
decides whether it applies and builds it per model, lazily, so a server without models (or
with summarization off) never constructs one.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import SummarizationMiddleware as LangChainSummarization
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.models import ModelFactory
from fawn.agent.state import ThreadState
from fawn.config.settings import SummarizationSettings


class SummarizationMiddleware(ChainMiddleware):
    # After the repair: a summary must not be cut from a history with unanswered calls.
    placement = Placement(
        name="summarization",
        stage=Stage.CONTEXT,
        after=frozenset({"dangling_tool_call_repair"}),
    )

    def __init__(self, settings: SummarizationSettings, models: ModelFactory) -> None:
        super().__init__()
        self._settings = settings
        self._models = models
        self._by_model: dict[str, LangChainSummarization[Any, RunContext]] = {}

    def _summarizer(
        self, runtime: Runtime[RunContext]
    ) -> LangChainSummarization[Any, RunContext] | None:
        if not self._settings.enabled:
            return None
        name = self._models.settings(
            self._settings.model_name or run_context(runtime).model_name
        ).name
        summarizer = self._by_model.get(name)
        if summarizer is None:
            summarizer = LangChainSummarization[Any, RunContext](
                self._models.get(name),
                trigger=("tokens", self._settings.trigger_tokens),
                keep=("messages", self._settings.keep_messages),
            )
            self._by_model[name] = summarizer
        return summarizer

    async def abefore_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        summarizer = self._summarizer(runtime)
        return None if summarizer is None else await summarizer.abefore_model(state, runtime)
