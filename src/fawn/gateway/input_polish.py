"""Polishing a draft before it is sent (DeerFlow's ``POST /api/input-polish``).

One call to the default model rewrites the user's rough draft into a clearer instruction:
no run, no thread state, nothing stored. The rewrite keeps the draft's language and intent
and adds nothing the draft does not imply.
"""

from __future__ import annotations

import logging
import re

from langchain_core.messages import HumanMessage, SystemMessage

from fawn.agent.models import ModelFactory
from fawn.runs.errors import InvalidInput, ModelCallFailed

log = logging.getLogger(__name__)

#: The longest draft accepted (after trimming), as DeerFlow's default.
MAX_CHARS = 4000

INSTRUCTION = """\
You improve a draft message before the user sends it to an AI agent. Rewrite the draft \
into a clear, specific instruction; never answer or carry out the task yourself.
Keep the user's language, intent and every concrete detail exactly: names, file paths, \
URLs, code, numbers, and a leading slash command.
Where the draft only implies the goal, scope, constraints or the form of the result, \
state them. Turn vague wishes ("make it nicer") into concrete, generic criteria.
Do not invent facts, files, dates, tools or preferences the draft does not imply.
Answer with the rewritten draft only: no preface, no explanation, no alternatives, no \
code fence around it. Keep it short (a paragraph or a few bullets)."""

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"\A```[\w-]*\n(?P<body>.*)\n```\Z", re.DOTALL)


def draft_text(text: str) -> str:
    """The draft as the model gets it: trimmed, present, not too long (422 otherwise)."""
    draft = text.strip()
    if not draft:
        raise InvalidInput("text: the draft is empty", field="text")
    if len(draft) > MAX_CHARS:
        raise InvalidInput(f"text: the draft exceeds {MAX_CHARS} characters", field="text")
    return draft


def cleaned(reply: str) -> str:
    """The rewrite without reasoning blocks or a fence wrapped around all of it."""
    text = _THINK.sub("", reply).strip()
    fenced = _FENCE.match(text)
    return (fenced.group("body") if fenced else text).strip()


def _prompt(draft: str, locale: str | None) -> str:
    language = locale.strip() if locale and locale.strip() else "the draft's own language"
    return f"Language: {language}\n\n<draft>\n{draft}\n</draft>"


async def polish(models: ModelFactory, text: str, locale: str | None) -> tuple[str, bool]:
    """The rewritten draft and whether it differs from the (trimmed) draft."""
    draft = draft_text(text)
    model = models.get(None)
    try:
        reply = await model.ainvoke(
            [SystemMessage(INSTRUCTION), HumanMessage(_prompt(draft, locale))]
        )
    except Exception as exc:
        log.warning("input polish: the model call failed: %s: %s", type(exc).__name__, exc)
        raise ModelCallFailed("the model could not polish the draft; try again") from exc
    rewritten = cleaned(reply.text)
    if not rewritten:
        raise ModelCallFailed("the model answered with an empty draft; try again")
    return rewritten, rewritten != draft
