"""Helpers for middleware that look at or rewrite a tool call's result or a model's answer.

A tool answers with a ``ToolMessage`` or with a ``Command`` whose update carries it (tools
that also write state: ``task``, ``present_files``, reads tracked by read-before-write).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command

ToolResult = ToolMessage | Command[Any]


def result_message(result: ToolResult) -> ToolMessage | None:
    """The ``ToolMessage`` a result carries (``None`` for a Command without one)."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update
    if isinstance(update, dict):
        for message in update.get("messages") or []:
            if isinstance(message, ToolMessage):
                return message
    return None


def with_message(result: ToolResult, change: Callable[[ToolMessage], ToolMessage]) -> ToolResult:
    """``result`` with its ``ToolMessage`` replaced by ``change(message)``."""
    if isinstance(result, ToolMessage):
        return change(result)
    update = result.update
    if not isinstance(update, dict) or result_message(result) is None:
        return result
    messages = [
        change(m) if isinstance(m, ToolMessage) else m for m in update.get("messages") or []
    ]
    return Command(
        graph=result.graph,
        update={**update, "messages": messages},
        resume=result.resume,
        goto=result.goto,
    )


def content_text(content: Any) -> str:
    """The text of a message's content (string, or the text of its parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")
        ]
        return "\n".join(parts)
    return ""


def answer_of(response: ModelResponse[Any] | AIMessage) -> AIMessage | None:
    """The AI message a model call answered with."""
    if isinstance(response, AIMessage):
        return response
    for message in reversed(response.result):
        if isinstance(message, AIMessage):
            return message
    return None


def replace_answer(
    response: ModelResponse[Any] | AIMessage, answer: AIMessage
) -> ModelResponse[Any] | AIMessage:
    if isinstance(response, AIMessage):
        return answer
    result = [answer if isinstance(m, AIMessage) else m for m in response.result]
    return ModelResponse(result=result, structured_response=response.structured_response)


def has_visible_text(message: AIMessage) -> bool:
    return bool(content_text(message.content).strip())


def final_answer(message: AIMessage, notice: str, **markers: Any) -> AIMessage:
    """``message`` (same id) without tool calls, ``notice`` appended, ``markers`` stamped in
    ``additional_kwargs`` (e.g. ``fawn_stop_reason``, which the run worker records)."""
    text = content_text(message.content).strip()
    return AIMessage(
        id=message.id,
        content=f"{text}\n\n{notice}" if text else notice,
        additional_kwargs={
            **{k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"},
            **markers,
        },
        response_metadata=message.response_metadata,
        usage_metadata=message.usage_metadata,
    )
