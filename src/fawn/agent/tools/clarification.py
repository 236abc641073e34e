"""``ask_clarification``: ask the user, as DeerFlow shows it, and pause until they answer.

The tool itself only writes the question into the thread: its ``ToolMessage`` (named
``ask_clarification``, answering the model's call) carries the question formatted the way
DeerFlow's ``ClarificationMiddleware`` formats it, and as artifact DeerFlow's structured
``human_input`` request, so DeerFlow's web app renders it unchanged. The artifact also keeps
the :class:`ClarificationRequest` the pause middleware
(:class:`fawn.agent.middleware.clarification.ClarificationPauseMiddleware`) raises as the
run's interrupt before the next model call; the answer (``Command(resume=...)`` or the
user's next message) then follows the question as the user's message. No tool call is ever
left without its result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.tools import BaseTool, InjectedToolCallId, tool

from fawn.agent.tools.names import ASK_CLARIFICATION

ClarificationType = Literal[
    "missing_info", "ambiguous_requirement", "approach_choice", "risk_confirmation", "suggestion"
]
CLARIFICATION_INTERRUPT: Literal["clarification"] = "clarification"
"""The ``type`` of the interrupt value, telling clients what to render."""

#: Where the question's tool message keeps the interrupt value (next to ``human_input``).
REQUEST_KEY = "clarification"

#: DeerFlow's icon per clarification type, leading the formatted question.
_ICONS: dict[str, str] = {
    "missing_info": "❓",
    "ambiguous_requirement": "🤔",
    "approach_choice": "🔀",
    "risk_confirmation": "⚠️",
    "suggestion": "💡",
}


class ClarificationRequest(TypedDict):
    """The interrupt's value, as clients receive it."""

    type: Literal["clarification"]
    question: str
    clarification_type: ClarificationType
    context: str | None
    options: list[str] | None


def answer_text(resume: object) -> str:
    """The user's answer for a resume value: a string as is; ``{"answer": ...}`` unwrapped;
    anything else as JSON."""
    if isinstance(resume, Mapping) and "answer" in resume:
        resume = resume["answer"]
    if isinstance(resume, str):
        return resume if resume.strip() else "(the user gave an empty answer)"
    if resume is None:
        return "(the user gave no answer)"
    return json.dumps(resume, ensure_ascii=False, default=str)


def request_id(tool_call_id: str) -> str:
    """The question's id in DeerFlow's protocol (its tool message id there too)."""
    return f"clarification:{tool_call_id}"


def _shown_options(options: list[str] | None) -> list[str]:
    """Options as DeerFlow's app accepts them: trimmed, no blanks, no duplicates (it rejects
    the whole structured request otherwise)."""
    shown: list[str] = []
    for option in options or []:
        text = str(option).strip()
        if text and text not in shown:
            shown.append(text)
    return shown


def format_question(request: ClarificationRequest) -> str:
    """The question as DeerFlow's ``ClarificationMiddleware`` writes it into the tool
    message: the type's icon, the context (if any) before the question, numbered options."""
    icon = _ICONS.get(request["clarification_type"], "❓")
    context, question = request["context"], request["question"]
    parts = [f"{icon} {context}", f"\n{question}"] if context else [f"{icon} {question}"]
    options = _shown_options(request["options"])
    if options:
        parts.append("")
        parts.extend(f"  {i}. {option}" for i, option in enumerate(options, 1))
    return "\n".join(parts)


def human_input_request(request: ClarificationRequest, tool_call_id: str) -> dict[str, Any]:
    """DeerFlow's structured request (``artifact.human_input``, protocol version 1): free text,
    or a choice with an "other" answer when there are options."""
    options = _shown_options(request["options"])
    payload: dict[str, Any] = {
        "version": 1,
        "kind": "human_input_request",
        "source": ASK_CLARIFICATION,
        "request_id": request_id(tool_call_id),
        "tool_call_id": tool_call_id,
        "clarification_type": request["clarification_type"],
        "question": request["question"],
        "context": request["context"],
        "input_mode": "choice_with_other" if options else "free_text",
    }
    if options:
        payload["options"] = [
            {"id": f"option-{i}", "label": option, "value": option}
            for i, option in enumerate(options, 1)
        ]
    return payload


def clarification_tool() -> BaseTool:
    @tool(ASK_CLARIFICATION, parse_docstring=True, response_format="content_and_artifact")
    async def ask_clarification(
        question: str,
        clarification_type: ClarificationType,
        tool_call_id: Annotated[str, InjectedToolCallId],
        context: str | None = None,
        options: list[str] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Ask the user for clarification when you cannot proceed well without their input.

        Use it when required information is missing (file paths, URLs, specific requirements), when a request can be read in several ways, when several valid approaches exist and the user's preference matters, before a risky or destructive operation, or to get approval for a suggestion. The run stops and the question is shown to the user; their answer comes back as their next message. Ask ONE clear, specific question at a time, and do not guess when you need to ask.

        Args:
            question: The clarification question to ask the user. Be specific and clear.
            clarification_type: The type of clarification needed (missing_info, ambiguous_requirement, approach_choice, risk_confirmation, suggestion).
            tool_call_id: Injected: the id of this call.
            context: Optional context explaining why clarification is needed. Helps the user understand the situation.
            options: Optional list of choices (for approach_choice or suggestion types). Present clear options for the user to choose from.
        """
        request: ClarificationRequest = {
            "type": CLARIFICATION_INTERRUPT,
            "question": question,
            "clarification_type": clarification_type,
            "context": context,
            "options": options,
        }
        artifact = {
            "human_input": human_input_request(request, tool_call_id),
            REQUEST_KEY: request,
        }
        return format_question(request), artifact

    return ask_clarification
