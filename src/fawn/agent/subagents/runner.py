"""Running one sub-agent: its own graph and conversation, the run's sandbox and limits.

Each sub-agent type is compiled once per server (LangChain ``create_agent``, no
checkpointer). A run of it starts from the task's prompt alone and reports every new step
(an AI answer or a tool result) to the caller as it happens.

The sub-agent's graph runs in a task of its own, started in an empty ``contextvars``
context: LangGraph would otherwise take it for a subgraph of the lead's tool node and share
the lead's checkpointer and stream with it. Cancellation still reaches it: the runner
cancels that task, waits for it to end (its sandbox commands killed) and re-raises.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph.state import CompiledStateGraph

from fawn.agent.context import RunContext
from fawn.agent.middleware._results import content_text
from fawn.agent.subagents.status import SubagentStatus, TokenUsage
from fawn.agent.subagents.types import SubagentType

#: ``on_step(message, index, usage so far)``: called for each new AI answer or tool result.
StepCallback = Callable[[BaseMessage, int, TokenUsage], Awaitable[None]]
Graph = CompiledStateGraph[Any, RunContext, Any, Any]


@dataclass(frozen=True, kw_only=True)
class SubagentOutcome:
    status: SubagentStatus
    result: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    usage: TokenUsage
    model_name: str
    steps: int
    duration_ms: int


class _Usage(UsageMetadataCallbackHandler):
    run_inline = True

    def totals(self) -> TokenUsage:
        totals: TokenUsage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        for meta in self.usage_metadata.values():
            totals["input_tokens"] += int(meta.get("input_tokens", 0) or 0)
            totals["output_tokens"] += int(meta.get("output_tokens", 0) or 0)
            totals["total_tokens"] += int(meta.get("total_tokens", 0) or 0)
        return totals


Step = tuple[BaseMessage, int, TokenUsage]


@dataclass(kw_only=True)
class _Progress:
    """New steps of the sub-agent's conversation, in order, numbered from 1."""

    usage: _Usage
    seen: set[str] = dataclasses.field(default_factory=set)
    steps: int = 0
    last: AIMessage | None = None

    def new_steps(self, messages: list[AnyMessage]) -> list[Step]:
        found: list[Step] = []
        for message in messages:
            if not isinstance(message, AIMessage | ToolMessage) or message.id in self.seen:
                continue
            if message.id is not None:
                self.seen.add(message.id)
            self.steps += 1
            found.append((message, self.steps, self.usage.totals()))
        # the latest version: a middleware may replace an answer under the same id
        answers = [m for m in messages if isinstance(m, AIMessage)]
        self.last = answers[-1] if answers else self.last
        return found


def _finished(last: AIMessage | None) -> tuple[SubagentStatus, str | None, str | None, str | None]:
    """(status, result, error, stop reason) from the sub-agent's last answer."""
    if last is None:
        return "failed", None, "the sub-agent produced no answer", None
    marker = last.additional_kwargs.get("fawn_error")
    if isinstance(marker, dict):
        return "failed", None, str(marker.get("message") or "the model call failed"), None
    text = content_text(last.content).strip()
    stop_reason = last.additional_kwargs.get("fawn_stop_reason")
    stop = str(stop_reason) if stop_reason else None
    if stop == "empty_response" or not text:
        return "failed", None, "the sub-agent returned no answer", stop
    return "completed", text, None, stop


class SubagentRunner:
    """Runs sub-agents of the configured types."""

    def __init__(
        self,
        graphs: Mapping[str, Graph],
        types: Mapping[str, SubagentType],
        model_name: Callable[[str | None], str],
    ) -> None:
        self._graphs = dict(graphs)
        self.types = dict(types)
        self._model_name = model_name

    def model_name(self, context: RunContext) -> str:
        """The configured name of the model the sub-agent uses (the default one if unset)."""
        return self._model_name(context.model_name)

    def context_for(self, kind: SubagentType, parent: RunContext, task_id: str) -> RunContext:
        """The parent's context for a sub-agent: same thread, run, user and token meter; no
        delegation, no plan mode, its own model if its type names one."""
        return dataclasses.replace(
            parent,
            subagent_enabled=False,
            is_plan_mode=False,
            model_name=kind.model_name or parent.model_name,
            subagent_task_id=task_id,
        )

    async def run(
        self,
        kind: SubagentType,
        prompt: str,
        context: RunContext,
        on_step: StepCallback,
    ) -> SubagentOutcome:
        progress = _Progress(usage=_Usage())
        started = time.monotonic()
        graph = self._graphs[kind.name]
        config: Any = {
            "callbacks": [progress.usage],
            "recursion_limit": kind.max_turns * 4 + 20,
            "metadata": {
                "run_id": context.run_id,
                "thread_id": context.thread_id,
                "subagent_type": kind.name,
                "task_id": context.subagent_task_id,
            },
        }
        steps: asyncio.Queue[Step | None] = asyncio.Queue()

        async def drive() -> None:
            try:
                async for values in graph.astream(
                    {"messages": [HumanMessage(content=prompt)]},
                    config,
                    context=context,
                    stream_mode="values",
                ):
                    for step in progress.new_steps(list(values.get("messages") or [])):
                        steps.put_nowait(step)
            finally:
                steps.put_nowait(None)

        def outcome(status: SubagentStatus, **fields: Any) -> SubagentOutcome:
            return SubagentOutcome(
                status=status,
                usage=progress.usage.totals(),
                model_name=self.model_name(context),
                steps=progress.steps,
                duration_ms=round((time.monotonic() - started) * 1000),
                **fields,
            )

        try:
            await _isolated(drive(), steps, on_step, timeout=kind.timeout_seconds)
        except TimeoutError:
            return outcome("timed_out", error=f"no answer within {kind.timeout_seconds:g} s")
        except GraphRecursionError:
            return outcome("failed", error="the sub-agent exceeded its step limit")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return outcome("failed", error=f"{type(exc).__name__}: {exc}")
        status, result, error, stop = _finished(progress.last)
        return outcome(status, result=result, error=error, stop_reason=stop)


async def _isolated(
    work: Coroutine[Any, Any, None],
    steps: asyncio.Queue[Step | None],
    on_step: StepCallback,
    *,
    timeout: float,  # noqa: ASYNC109
) -> None:
    """Run ``work`` in a task with an empty context, reporting its ``steps`` from this one
    (where the run's stream writer and callbacks live), within ``timeout`` seconds. On
    timeout, cancellation or error the task is cancelled and awaited before this returns."""
    task = asyncio.get_running_loop().create_task(work, context=contextvars.Context())
    try:
        async with asyncio.timeout(timeout):
            while (step := await steps.get()) is not None:
                await on_step(*step)
            await asyncio.shield(task)
    except BaseException:
        task.cancel()
        await asyncio.wait([task])
        raise
