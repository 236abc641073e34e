"""``ask_clarification``: stop the run and ask the user, then go on with the answer.

The question travels as a LangGraph ``interrupt`` whose value is a
:class:`ClarificationRequest`; the run ends ``interrupted``. Resuming the thread with
``Command(resume=answer)`` re-enters the tool, and the answer becomes its result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal, TypedDict

from langchain_core.tools import BaseTool, tool
from langgraph.types import interrupt

from fawn.agent.tools.names import ASK_CLARIFICATION

ClarificationType = Literal[
    "missing_info", "ambiguous_requirement", "approach_choice", "risk_confirmation", "suggestion"
]
CLARIFICATION_INTERRUPT: Literal["clarification"] = "clarification"
"""The ``type`` of the interrupt value, telling clients what to render."""


class ClarificationRequest(TypedDict):
    """The interrupt's value, as clients receive it."""

    type: Literal["clarification"]
    question: str
    clarification_type: ClarificationType
    context: str | None
    options: list[str] | None


def answer_text(resume: object) -> str:
    """The tool's result for a resume value: a string as is; ``{"answer": ...}`` unwrapped;
    anything else as JSON."""
    if isinstance(resume, Mapping) and "answer" in resume:
        resume = resume["answer"]
    if isinstance(resume, str):
        return resume if resume.strip() else "(the user gave an empty answer)"
    if resume is None:
        return "(the user gave no answer)"
    return json.dumps(resume, ensure_ascii=False, default=str)


def clarification_tool() -> BaseTool:
    @tool(ASK_CLARIFICATION, parse_docstring=True)
    async def ask_clarification(
        question: str,
        clarification_type: ClarificationType,
        context: str | None = None,
        options: list[str] | None = None,
    ) -> str:
        """Ask the user for clarification when you cannot proceed well without their input.

        Use it when required information is missing (file paths, URLs, specific requirements), when a request can be read in several ways, when several valid approaches exist and the user's preference matters, before a risky or destructive operation, or to get approval for a suggestion. The run stops and the question is shown to the user; their answer comes back as this tool's result. Ask ONE clear, specific question at a time, and do not guess when you need to ask.

        Args:
            question: The clarification question to ask the user. Be specific and clear.
            clarification_type: The type of clarification needed (missing_info, ambiguous_requirement, approach_choice, risk_confirmation, suggestion).
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
        return answer_text(interrupt(request))

    return ask_clarification
