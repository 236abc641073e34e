"""Input sanitization: user text cannot imitate the tags the framework writes.

The framework speaks to the model in tags (``<uploaded_files>`` from the uploads middleware,
``<system>``-like blocks, tool-call markup). A user who types such a tag could pass off their
own text as framework-owned. This middleware escapes those tags (``<system>`` becomes
``&lt;system&gt;``) and chat-template tokens (``<|im_start|>``) in the human messages of the
turn being started, before any framework middleware adds its own blocks.

Only the messages after the last AI message are the new turn: earlier ones were sanitized
when they arrived and may now carry genuine framework blocks that must stay intact. (A run
cancelled before any answer leaves its message inside the next turn: escaping it again is
harmless, its uploads block is escaped too and those files are simply announced again.)
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import last_ai_index
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import ThreadState

#: Tag names the framework or the model's chat template give meaning to.
FRAMEWORK_TAGS: tuple[str, ...] = (
    "uploaded_files",
    "system",
    "system[-_]reminder",
    "system[-_]prompt",
    "instructions?",
    "tool",
    "tools",
    "tool[-_]calls?",
    "tool[-_]results?",
    "tool[-_]use",
    "tool[-_]response",
    "function[-_]calls?",
    "function[-_]results?",
    "invoke",
    "parameter",
    "assistant",
    "user",
    "human",
    "context",
    "memory",
    "thinking",
    "think",
    r"fawn[-_:\w]*",
)

_TAG = re.compile(
    r"<\s*/?\s*(?:" + "|".join(FRAMEWORK_TAGS) + r")(?=[\s/>])[^<>]*>",
    re.IGNORECASE,
)
_TEMPLATE_TOKEN = re.compile(r"<\|[^<>|]{1,64}\|>")


def neutralise(text: str) -> str:
    """``text`` with framework-looking tags and template tokens escaped (idempotent)."""

    def escape(match: re.Match[str]) -> str:
        return match.group(0).replace("<", "&lt;").replace(">", "&gt;")

    return _TEMPLATE_TOKEN.sub(escape, _TAG.sub(escape, text))


def _sanitized_content(content: str | list[str | dict[str, Any]]) -> Any:
    if isinstance(content, str):
        return neutralise(content)
    parts: list[str | dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append(neutralise(part))
        elif part.get("type") == "text" and isinstance(part.get("text"), str):
            parts.append({**part, "text": neutralise(part["text"])})
        else:
            parts.append(part)
    return parts


def sanitize_turn(messages: list[AnyMessage]) -> list[AnyMessage]:
    """Replacements (same ids) for the new turn's human messages whose text changes."""
    last_ai = last_ai_index(messages)
    start = 0 if last_ai is None else last_ai + 1
    changed: list[AnyMessage] = []
    for message in messages[start:]:
        if not isinstance(message, HumanMessage):
            continue
        content = _sanitized_content(message.content)
        if content != message.content:
            changed.append(message.model_copy(update={"content": content}))
    return changed


class InputSanitizationMiddleware(ChainMiddleware):
    placement = Placement(name="input_sanitization", stage=Stage.INPUT)

    async def abefore_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        changed = sanitize_turn(state["messages"])
        return {"messages": changed} if changed else None
