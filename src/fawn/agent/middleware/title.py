"""Title: name the thread after its first complete exchange.

When a run ends with a final answer (an AI message without tool calls or an error marker)
and the thread has no title yet, the title model (``title.model_name``, else the run's model)
is asked with ``title.prompt_template`` about the first user message and that answer. Its
reply is cut to ``title.max_chars``. If anything fails, the title is the user's text cut to
``max_chars``: a thread is always named, and naming never fails a run. The title model is
called outside the conversation: its tokens are tagged out of the messages stream.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import is_control_flow, run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.middleware.uploads import strip_blocks
from fawn.agent.models import ModelFactory
from fawn.agent.state import ThreadState
from fawn.config.settings import TitleSettings

log = logging.getLogger(__name__)

#: How much of each side of the exchange the title prompt quotes.
EXCERPT_CHARS = 500

_PREFIX = re.compile(r"^\W*title\s*:", re.IGNORECASE)
_DECORATION = "\"'`#*_ "


def one_line(text: str) -> str:
    return " ".join(text.split())


def clean_title(reply: str, max_chars: int) -> str:
    """The first non-empty line of ``reply`` without quotes or a "Title:" prefix."""
    line = next((line for line in reply.splitlines() if line.strip()), "")
    title = _PREFIX.sub("", one_line(line)).strip(_DECORATION).rstrip(".")
    return title[:max_chars].strip()


def first_exchange(messages: list[AnyMessage]) -> tuple[str, str] | None:
    """(user text, final answer) when the run ended with a final answer, else None."""
    if not messages:
        return None
    last = messages[-1]
    if not isinstance(last, AIMessage) or last.tool_calls:
        return None
    if "fawn_error" in last.additional_kwargs:
        return None
    first_human = next((m for m in messages if isinstance(m, HumanMessage)), None)
    if first_human is None:
        return None
    return one_line(strip_blocks(first_human.text)), last.text


class TitleMiddleware(ChainMiddleware):
    placement = Placement(name="title", stage=Stage.BOOKKEEPING)

    def __init__(self, settings: TitleSettings, models: ModelFactory) -> None:
        super().__init__()
        self._settings = settings
        self._models = models

    def _exchange(self, state: ThreadState) -> tuple[str, str] | None:
        if not self._settings.enabled or state.get("title"):
            return None
        return first_exchange(state["messages"])

    def _prompt(self, user: str, answer: str) -> str:
        return self._settings.prompt_template.format(
            max_words=self._settings.max_words,
            user_msg=user[:EXCERPT_CHARS],
            assistant_msg=answer[:EXCERPT_CHARS],
        )

    def _fallback(self, user: str, runtime: Runtime[RunContext], exc: Exception) -> str:
        if is_control_flow(exc):
            raise exc
        log.warning(
            "run %s: title generation failed, using the user's text: %s: %s",
            run_context(runtime).run_id,
            type(exc).__name__,
            exc,
        )
        # Sanitization escaped tag-like text for the model; a title is for people.
        return html.unescape(user)[: self._settings.max_chars].strip()

    def _model_name(self, runtime: Runtime[RunContext]) -> str | None:
        return self._settings.model_name or run_context(runtime).model_name

    async def aafter_agent(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        exchange = self._exchange(state)
        if exchange is None:
            return None
        user, answer = exchange
        try:
            model = self._models.get(self._model_name(runtime))
            reply = await model.ainvoke(self._prompt(user, answer), config={"tags": [TAG_NOSTREAM]})
            title = clean_title(reply.text, self._settings.max_chars)
            if not title:
                raise ValueError("the title model answered with an empty title")
        except Exception as exc:
            title = self._fallback(user, runtime, exc)
        return {"title": title} if title else None
