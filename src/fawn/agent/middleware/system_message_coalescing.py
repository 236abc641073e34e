"""System message coalescing: a model call carries one system message, at the start.

Several middleware add system text to a call (plan mode's instructions, the dynamic
context's reminder) and a client may send its own system messages. Many providers accept
only one system message, first (Anthropic, vLLM and other strict OpenAI-compatible
servers). The innermost request rewrite merges them, in order, into one leading message.
Only the request changes: the thread's messages stay as they are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import content_text
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage


def coalesced(request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
    inline = [m for m in request.messages if isinstance(m, SystemMessage)]
    if not inline:
        return request
    texts: list[str] = [] if request.system_message is None else [str(request.system_message.text)]
    texts += [content_text(m.content) for m in inline]
    return request.override(
        system_message=SystemMessage(content="\n\n".join(t for t in texts if t.strip())),
        messages=[m for m in request.messages if not isinstance(m, SystemMessage)],
    )


class SystemMessageCoalescingMiddleware(ChainMiddleware):
    placement = Placement(
        name="system_message_coalescing",
        stage=Stage.CONTROL,
        after=frozenset({"loop_detection", "token_budget", "terminal_response"}),
    )

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(coalesced(request))
