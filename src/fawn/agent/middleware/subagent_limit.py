"""Sub-agent limits: who may delegate, how many at once, how many per run.

Outside runs with ``subagent_enabled`` the ``task`` tool is not bound for the model and is
refused if called. Inside them, after each model answer its ``task`` calls are admitted up to
the run's concurrency (``max_concurrent_subagents``, at most ``subagents.max_concurrent``)
and its remaining total (``subagents.max_total_per_run``): admitted calls enter the
``delegations`` ledger as ``in_progress``, tagged with the run, and the tool wrapper runs
only those; the excess gets a refusal result saying which limit it hit. A model that asks
for more once the run's total is spent gets its answer ended (same id, tool calls dropped)
with ``additional_kwargs["fawn_stop_reason"] = "subagent_limit_capped"``.

A delegation left ``in_progress`` by an earlier run (cancelled while its sub-agents
worked) is closed as ``cancelled`` after the next run's first model answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain.agents.middleware import (
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
    hook_config,
)
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.runtime import Runtime

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import ToolResult, final_answer
from fawn.agent.middleware._shared import run_context
from fawn.agent.middleware._visibility import refusal, without_tools
from fawn.agent.middleware.chain import ChainMiddleware, Placement, Stage
from fawn.agent.state import DelegationEntry, ThreadState
from fawn.agent.tools.names import SUBAGENT_TOOLS, TASK
from fawn.config.settings import SubagentSettings

log = logging.getLogger(__name__)

SUBAGENT_LIMIT_CAPPED = "subagent_limit_capped"


def concurrency(context: RunContext, settings: SubagentSettings) -> int:
    """How many sub-agents the run may have at once (the request cannot widen the config)."""
    return max(1, min(context.max_concurrent_subagents, settings.max_concurrent))


def run_delegations(state: ThreadState, run_id: str) -> list[DelegationEntry]:
    return [e for e in state.get("delegations") or [] if e.get("run_id") == run_id]


def delegation(call: ToolCall, run_id: str) -> DelegationEntry:
    args = call.get("args") or {}
    return {
        "id": str(call["id"]),
        "run_id": run_id,
        "description": str(args.get("description") or "")[:200],
        "subagent_type": str(args.get("subagent_type") or ""),
        "status": "in_progress",
        "created_at": datetime.now(UTC).isoformat(),
    }


def _abandoned(state: ThreadState, run_id: str) -> list[DelegationEntry]:
    """Delegations an earlier run left in progress (it was cancelled meanwhile), closed."""
    return [
        {**e, "status": "cancelled"}
        for e in state.get("delegations") or []
        if e["status"] == "in_progress" and e.get("run_id") != run_id
    ]


def _task_calls(message: AIMessage) -> Sequence[ToolCall]:
    return [c for c in message.tool_calls if c["name"] == TASK and c.get("id")]


class SubagentLimitMiddleware(ChainMiddleware):
    placement = Placement(
        name="subagent_limit",
        stage=Stage.CAPABILITIES,
        after=frozenset({"model_error_handling"}),
    )

    def __init__(self, settings: SubagentSettings) -> None:
        super().__init__()
        self._settings = settings

    async def awrap_model_call(
        self,
        request: ModelRequest[RunContext],
        handler: Callable[[ModelRequest[RunContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        if run_context(request.runtime).subagent_enabled:
            return await handler(request)
        return await handler(without_tools(request, SUBAGENT_TOOLS))

    @hook_config(can_jump_to=["end"])
    async def aafter_model(
        self, state: ThreadState, runtime: Runtime[RunContext]
    ) -> dict[str, Any] | None:
        context = run_context(runtime)
        stale = _abandoned(state, context.run_id)
        messages = state["messages"]
        last = messages[-1] if messages else None
        calls = _task_calls(last) if isinstance(last, AIMessage) else []
        if not (context.subagent_enabled and isinstance(last, AIMessage) and calls):
            return {"delegations": stale} if stale else None
        remaining = self._settings.max_total_per_run - len(run_delegations(state, context.run_id))
        if remaining <= 0:
            log.warning("run %s: sub-agent total reached; ending the run", context.run_id)
            notice = (
                f"[Stopped: this run already used its {self._settings.max_total_per_run} "
                "sub-agent tasks and asked for more.]"
            )
            capped = final_answer(last, notice, fawn_stop_reason=SUBAGENT_LIMIT_CAPPED)
            update: dict[str, Any] = {"messages": [capped], "jump_to": "end"}
            return {**update, "delegations": stale} if stale else update
        admitted = calls[: min(concurrency(context, self._settings), remaining)]
        return {"delegations": [*stale, *(delegation(c, context.run_id) for c in admitted)]}

    def _refused(self, request: ToolCallRequest) -> ToolMessage | None:
        context = run_context(request.runtime)
        if not context.subagent_enabled:
            return refusal(request, "sub-agents are off (the run has subagent_enabled=false)")
        mine = run_delegations(request.state, context.run_id)
        call_id = request.tool_call["id"]
        if any(e["id"] == call_id and e["status"] == "in_progress" for e in mine):
            return None
        total = self._settings.max_total_per_run
        if len(mine) >= total:
            why = f"this run has used its limit of {total} sub-agent tasks; do the rest yourself"
        else:
            limit = concurrency(context, self._settings)
            why = (
                f"at most {limit} sub-agent tasks run at once and this step asked for more. "
                "Wait for the running tasks' results, then delegate this one again"
            )
        return ToolMessage(
            content=f"Error: task not started: {why}.",
            tool_call_id=call_id,
            name=TASK,
            status="error",
        )

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        if request.tool_call["name"] != TASK:
            return await handler(request)
        return self._refused(request) or await handler(request)
