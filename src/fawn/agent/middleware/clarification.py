"""Clarification: the run pauses on the model's question until the user answers it.

Two middleware, one protocol. ``ask_clarification`` writes the question as its tool message
(DeerFlow's format, so DeerFlow's web app renders it); then:

- :class:`ClarificationMiddleware`, last in the chain (its ``after_model`` runs first),
  keeps only the first clarification call of an AI message and drops its siblings: they
  would run before the question reaches the user, acting on assumptions the question exists
  to check.
- :class:`ClarificationPauseMiddleware`, first of the ``before_model`` hooks, raises the
  run's interrupt when the thread ends with an unanswered question, so the run ends
  ``interrupted`` with the question as its interrupt value. ``Command(resume=answer)``
  re-enters the hook, and the answer joins the thread as the user's message, right after the
  question. A new user message answers it too: the thread no longer ends with the question,
  so nothing pauses. Either way the model reads question then answer, and every tool call
  has its result (DeerFlow ends the run instead, and loses the resume).
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.middleware.input_sanitization import neutralise
from fawn.agent.state import ThreadState
from fawn.agent.tools.clarification import (
    REQUEST_KEY,
    ClarificationRequest,
    answer_text,
    request_id,
)

log = logging.getLogger(__name__)


def _content_without(content: Any, dropped_ids: set[str]) -> Any:
    """Provider content blocks for the dropped calls (e.g. Anthropic ``tool_use``) go too."""
    if not isinstance(content, list):
        return content
    return [
        part for part in content if not (isinstance(part, dict) and part.get("id") in dropped_ids)
    ]


def only_clarification(message: AIMessage, tool_name: str) -> AIMessage | None:
    """``message`` reduced to its first ``tool_name`` call, or None if nothing to drop."""
    asks = [call for call in message.tool_calls if call["name"] == tool_name]
    if not asks or len(message.tool_calls) == 1:
        return None
    kept = asks[0]
    dropped = {call["id"] for call in message.tool_calls if call is not kept and call["id"]}
    return message.model_copy(
        update={
            "tool_calls": [kept],
            "invalid_tool_calls": [],
            "content": _content_without(message.content, dropped),
            "additional_kwargs": {
                k: v for k, v in message.additional_kwargs.items() if k != "tool_calls"
            },
        }
    )


class ClarificationMiddleware(ChainMiddleware):
    placement = Placement(
        name="clarification", stage=Stage.LAST, after=frozenset({"loop_detection"})
    )

    def __init__(self, *, tool_name: str) -> None:
        super().__init__()
        self._tool_name = tool_name

    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage):
            return None
        reduced = only_clarification(last, self._tool_name)
        if reduced is None:
            return None
        kept_id = reduced.tool_calls[0]["id"]
        dropped = [call["name"] for call in last.tool_calls if call["id"] != kept_id]
        log.info(
            "run %s: %s asked; dropped sibling calls %s",
            run_context(runtime).run_id,
            self._tool_name,
            dropped,
        )
        return {"messages": [reduced]}


def open_question(messages: list[AnyMessage], tool_name: str) -> ToolMessage | None:
    """The question the thread ends with, unanswered, or None."""
    last = messages[-1] if messages else None
    if (
        isinstance(last, ToolMessage)
        and last.name == tool_name
        and last.status == "success"
        and isinstance(last.artifact, dict)
        and isinstance(last.artifact.get(REQUEST_KEY), dict)
    ):
        return last
    return None


def answer_message(question: ToolMessage, resume: object) -> HumanMessage:
    """The user's answer as their message. Its text is escaped like any user input (the
    answer skips the turn's input sanitization), and it carries DeerFlow's structured
    response, so DeerFlow's app shows the question answered instead of the reply."""
    text = neutralise(answer_text(resume))
    response = {
        "version": 1,
        "kind": "human_input_response",
        "source": question.name,
        "request_id": request_id(question.tool_call_id),
        "response_kind": "text",
        "value": text,
    }
    return HumanMessage(
        content=text,
        additional_kwargs={"hide_from_ui": True, "human_input_response": response},
    )


class ClarificationPauseMiddleware(ChainMiddleware):
    """Pause before the model call that would otherwise read an unanswered question."""

    placement = Placement(
        name="clarification_pause",
        stage=Stage.HISTORY,
        before=frozenset({"dangling_tool_call_repair"}),
    )

    def __init__(self, *, tool_name: str) -> None:
        super().__init__()
        self._tool_name = tool_name

    async def abefore_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        question = open_question(state["messages"], self._tool_name)
        if question is None:
            return None
        request: ClarificationRequest = question.artifact[REQUEST_KEY]
        log.info("run %s: paused on %s", run_context(runtime).run_id, self._tool_name)
        return {"messages": [answer_message(question, interrupt(request))]}
