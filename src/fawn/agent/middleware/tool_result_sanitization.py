"""Tool-result sanitization: remote content cannot imitate the framework's tags.

Some tools hand the model text that nobody on the server wrote: a shell command's output can
be a downloaded page, a log line or a file an attacker planted. Such text could carry a
forged ``<system-reminder>`` or chat-template token. The results of :data:`REMOTE_CONTENT_TOOLS`
get the same escaping as the user's input (see :mod:`input_sanitization`); the results of
file tools, which show the workspace's own files verbatim, are left alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import ToolMessage

from fawn.agent.middleware._results import ToolResult, with_message
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.middleware.input_sanitization import neutralise
from fawn.agent.tools.names import BASH

#: Tools whose results carry text from outside the server.
REMOTE_CONTENT_TOOLS: frozenset[str] = frozenset({BASH})


def _sanitized(message: ToolMessage) -> ToolMessage:
    if not isinstance(message.content, str):
        return message
    text = neutralise(message.content)
    return message if text == message.content else message.model_copy(update={"content": text})


class ToolResultSanitizationMiddleware(ChainMiddleware):
    # Outside the output budget: the excerpt the model reads is what gets escaped.
    placement = Placement(
        name="tool_result_sanitization",
        stage=Stage.GUARDS,
        after=frozenset({"tool_error_handling"}),
    )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        result = await handler(request)
        if request.tool_call["name"] not in REMOTE_CONTENT_TOOLS:
            return result
        return with_message(result, _sanitized)
