"""A chat model that stands in when no model is configured, so the graph (and with it the
threads and state API) still exists; calling it says what to configure."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from fawn.agent.errors import NoModelConfigured


class UnconfiguredChatModel(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "fawn-unconfigured"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NoModelConfigured()

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self
