"""Dynamic context: facts only the server knows, as a system reminder once per turn.

The system prompt stays static (providers cache it as a prefix). What changes from turn to
turn (today's date; this run's sub-agent limits) goes into one ``<system-reminder>`` system
message placed before the turn's user message, in the model request only: the user's
message is never rewritten and the reminder is not stored in the thread.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.messages import SystemMessage

from fawn.agent.context import RunContext
from fawn.agent.middleware._shared import last_human_index, run_context
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.middleware.subagent_limit import concurrency
from fawn.config.settings import SubagentSettings

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


def reminder(context: RunContext, now: datetime, subagents: SubagentSettings) -> str:
    lines = [f"<current_date>{now:%Y-%m-%d, %A}</current_date>"]
    if context.subagent_enabled and context.subagent_task_id is None:
        lines.append(
            f"<subagents>The task tool is available: at most "
            f"{concurrency(context, subagents)} sub-agents per step and "
            f"{subagents.max_total_per_run} per run.</subagents>"
        )
    return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>"


class DynamicContextMiddleware(ChainMiddleware):
    placement = Placement(name="dynamic_context", stage=Stage.CONTEXT)

    def __init__(self, subagents: SubagentSettings, *, clock: Clock = _utcnow) -> None:
        super().__init__()
        self._subagents = subagents
        self._clock = clock

    def _with_reminder(self, request: ModelRequest[RunContext]) -> ModelRequest[RunContext]:
        text = reminder(run_context(request.runtime), self._clock(), self._subagents)
        messages = list(request.messages)
        at = last_human_index(messages)
        messages.insert(0 if at is None else at, SystemMessage(content=text))
        return request.override(messages=messages)

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._with_reminder(request))
