"""The ``task`` tool: delegate one piece of work to a sub-agent and wait for its answer.

While the sub-agent works the tool reports progress as ``custom`` stream events named and
shaped as DeerFlow's web app reads them (``task_started``, ``task_running`` with the
sub-agent's latest step, then ``task_completed`` / ``task_failed`` / ``task_cancelled`` /
``task_timed_out``), and the same facts as LangChain custom callback events named
:data:`SUBAGENT_EVENT` for the run's journal and usage ledger. It answers with a
``Command`` that adds the ``ToolMessage`` (text and structured fields, see
:mod:`fawn.agent.subagents.status`) and closes the task's ``delegations`` entry.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

from langchain_core.callbacks import adispatch_custom_event
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import content_text
from fawn.agent.state import DelegationEntry
from fawn.agent.subagents.runner import SubagentOutcome, SubagentRunner
from fawn.agent.subagents.status import (
    TokenUsage,
    bounded,
    result_fields,
    result_text,
)
from fawn.agent.subagents.types import SubagentType
from fawn.agent.tools.access import RunToolRuntime, run_context, tool_call_id
from fawn.agent.tools.names import TASK

#: The name of the callback events the run's journal and usage ledger read.
SUBAGENT_EVENT = "fawn.subagent"
#: Longest step text a journal entry keeps.
STEP_TEXT_MAX_CHARS = 2000

_TERMINAL_EVENTS = {
    "completed": "task_completed",
    "failed": "task_failed",
    "cancelled": "task_cancelled",
    "timed_out": "task_timed_out",
}

_DOC = """Delegate a bounded task to a sub-agent that works in its own context and reports back.

Use it for independent pieces of work that can run in parallel, or for a self-contained \
investigation whose details would crowd your own context. Several task calls in one step \
run at the same time (up to the run's limit). Do not split dependent steps across \
sub-agents, do not give two sub-agents the same files to change, and do not delegate what \
you can do directly in a step or two. The sub-agent shares the workspace files but not this \
conversation: put everything it needs in the prompt.

Sub-agent types:
{types}

Args:
    description: A short (3-5 word) description of the task, shown to the user. ALWAYS PROVIDE THIS PARAMETER FIRST.
    prompt: The complete task for the sub-agent: what to do, with which files, and what to report. ALWAYS PROVIDE THIS PARAMETER SECOND.
    subagent_type: The type of sub-agent to use (one of the types above). ALWAYS PROVIDE THIS PARAMETER THIRD.
"""


def _step(message: BaseMessage, index: int) -> dict[str, Any]:
    """A sub-agent step as the journal keeps it (bounded)."""
    step: dict[str, Any] = {
        "message_index": index,
        "kind": "tool" if isinstance(message, ToolMessage) else "ai",
        "text": content_text(message.content)[:STEP_TEXT_MAX_CHARS],
    }
    if isinstance(message, ToolMessage):
        step["tool_name"] = message.name
        step["status"] = message.status
    else:
        step["tool_calls"] = [c["name"] for c in getattr(message, "tool_calls", [])]
    return step


class _Reporter:
    """Where one task's progress goes: the stream (custom events) and the journal."""

    def __init__(self, runtime: RunToolRuntime, task_id: str, model_name: str) -> None:
        self._runtime = runtime
        self._task_id = task_id
        self._model_name = model_name

    def stream(self, event: str, **fields: Any) -> None:
        payload = {"type": event, "task_id": self._task_id, **fields}
        self._runtime.stream_writer({**payload, "model_name": self._model_name})

    async def journal(self, kind: str, **fields: Any) -> None:
        # Without a parent run (a tool invoked on its own) there is no journal to feed.
        with contextlib.suppress(RuntimeError):
            await adispatch_custom_event(
                SUBAGENT_EVENT,
                {"kind": kind, "task_id": self._task_id, **fields},
                config=self._runtime.config,
            )

    async def step(self, message: BaseMessage, index: int, usage: TokenUsage) -> None:
        self.stream(
            "task_running",
            message=message,
            message_index=index,
            total_messages=index,
            usage=usage,
        )
        await self.journal("subagent_step", step=_step(message, index))


def _answer(
    call_id: str,
    entry: DelegationEntry,
    outcome: SubagentOutcome | None,
    *,
    error: str | None = None,
) -> Command[Any]:
    status = outcome.status if outcome is not None else "failed"
    fields: dict[str, Any] = {
        "result": outcome.result if outcome else None,
        "error": outcome.error if outcome else error,
        "stop_reason": outcome.stop_reason if outcome else None,
    }
    closed: DelegationEntry = {**entry, "status": status}
    if fields["stop_reason"]:
        closed["stop_reason"] = fields["stop_reason"]
    brief = fields["result"] or fields["error"]
    if brief:
        closed["result_brief"] = bounded(brief, 500)
    message = ToolMessage(
        content=result_text(status, **fields),
        tool_call_id=call_id,
        name=TASK,
        status="success" if status == "completed" else "error",
        additional_kwargs=result_fields(
            status,
            **fields,
            model_name=outcome.model_name if outcome else None,
            usage=outcome.usage if outcome else None,
        ),
    )
    return Command(update={"messages": [message], "delegations": [closed]})


def _entry(call_id: str, context: RunContext, description: str, kind: str) -> DelegationEntry:
    return {
        "id": call_id,
        "run_id": context.run_id,
        "description": description[:200],
        "subagent_type": kind,
        "status": "in_progress",
        "created_at": datetime.now(UTC).isoformat(),
    }


async def _delegate(
    runner: SubagentRunner,
    kind: SubagentType,
    prompt: str,
    description: str,
    runtime: RunToolRuntime,
) -> SubagentOutcome:
    call_id = tool_call_id(runtime)
    context = runner.context_for(kind, run_context(runtime), call_id)
    report = _Reporter(runtime, call_id, runner.model_name(context))
    report.stream("task_started", description=description, subagent_type=kind.name)
    await report.journal("subagent_started", subagent_type=kind.name, description=description)
    try:
        outcome = await runner.run(kind, prompt, context, report.step)
    except asyncio.CancelledError:
        # The sub-agent has stopped (the runner awaited it). The stream may already be
        # gone; the journal is written when the run is finalized.
        report.stream("task_cancelled", error="the run was cancelled")
        await report.journal("subagent_finished", subagent_type=kind.name, status="cancelled")
        raise
    event: dict[str, Any] = {"usage": outcome.usage}
    if outcome.status == "completed":
        event["result"] = outcome.result
    else:
        event["error"] = outcome.error
    report.stream(_TERMINAL_EVENTS[outcome.status], **event)
    await report.journal(
        "subagent_finished",
        subagent_type=kind.name,
        status=outcome.status,
        stop_reason=outcome.stop_reason,
        model_name=outcome.model_name,
        usage=outcome.usage,
        steps=outcome.steps,
        duration_ms=outcome.duration_ms,
    )
    return outcome


def task_tool(runner: SubagentRunner) -> BaseTool:
    """The ``task`` tool over ``runner``'s sub-agent types."""

    async def task(
        description: str, prompt: str, subagent_type: str, runtime: RunToolRuntime
    ) -> Command[Any]:
        call_id = tool_call_id(runtime)
        entry = _entry(call_id, run_context(runtime), description, subagent_type)
        kind = runner.types.get(subagent_type)
        if kind is None:
            known = ", ".join(runner.types)
            error = f"unknown subagent_type {subagent_type!r}; available: {known}"
            return _answer(call_id, entry, None, error=error)
        outcome = await _delegate(runner, kind, prompt, description, runtime)
        return _answer(call_id, entry, outcome)

    listing = "\n".join(f"- {t.name}: {t.description}" for t in runner.types.values())
    task.__doc__ = _DOC.format(types=listing)
    return tool(TASK, parse_docstring=True)(task)
