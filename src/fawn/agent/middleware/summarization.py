"""Summarization: keep a long conversation inside the context window (off by default).

When ``summarization.enabled`` and the history passes ``trigger_tokens``, the older messages
are replaced by a summary written by the summarization model (``summarization.model_name``,
else the run's model), keeping the last ``keep_messages``. The work is LangChain's
``SummarizationMiddleware`` (it never splits a tool call from its result); this module only
decides whether it applies and builds it per model, lazily, so a server without models (or
with summarization off) never constructs one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import SummarizationMiddleware as LangChainSummarization
from langchain.agents.middleware.summarization import ContextSize
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, RemoveMessage
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


@dataclass(frozen=True, kw_only=True)
class Compaction:
    """A history summarized now, on request: the update that replaces it, and its counts."""

    update: list[AnyMessage]
    removed: int
    preserved: int
    tokens_before: int


async def compact(
    messages: list[AnyMessage],
    model: BaseChatModel,
    *,
    keep: ContextSize,
    trigger_tokens: int | None = None,
) -> Compaction | None:
    """Summarize ``messages`` now, keeping the newest ones ``keep`` names (the middleware's
    work, on request): whatever their size, or only past ``trigger_tokens`` when given.
    None when there is nothing to summarize. The model's failure propagates."""
    trigger: ContextSize = ("messages", 1) if trigger_tokens is None else ("tokens", trigger_tokens)
    summarizer = LangChainSummarization[Any, None](model, trigger=trigger, keep=keep)
    tokens = summarizer.token_counter(messages)
    update = await summarizer.abefore_model({"messages": list(messages)}, Runtime())
    if update is None:
        return None
    new = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
    kept_ids = {m.id for m in messages}
    preserved = sum(1 for m in new if m.id in kept_ids)
    return Compaction(
        update=update["messages"],
        removed=len(messages) - preserved,
        preserved=preserved,
        tokens_before=tokens,
    )
