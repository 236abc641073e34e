"""Execution: one claimed run through the lead agent's graph, to an :class:`Outcome`.

The graph's output stream is left open on the run (``LocalRun.graph_stream``): closing it is
finalization's first step, whatever way execution ended. Graph output becomes stream events through the injected renderer and goes to the run's
publisher (which never makes the graph wait). Whatever the graph does — finish, pause at an
interrupt, fail, or be cancelled — execution ends with an outcome; what to make durable is
finalization's job (:mod:`fawn.runs.finalization`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError

from fawn.agent.context import RunContext
from fawn.agent.graph import LeadAgent
from fawn.runs.clock import Clock
from fawn.runs.events import StreamRenderer
from fawn.runs.journal import RunJournal, UsageLedger
from fawn.runs.local import LocalRun, StopReason
from fawn.runs.outcome import Outcome, RunError
from fawn.runs.publisher import RunPublisher
from fawn.runs.threads import thread_config
from fawn.runs.workspace import RunEvidence, WorkspaceEvidence

log = logging.getLogger(__name__)

#: when the graph's steps become durable (LangGraph's ``durability``)
Durability = Literal["sync", "async", "exit"]

SHUTDOWN_ERROR = RunError(error="ServerShutdown", message="the server shut down during the run")


@dataclass(frozen=True, kw_only=True)
class RunScope:
    """What one execution collects besides state: its context (with the agent's notes), the
    token usage ledger and the journal."""

    context: RunContext
    usage: UsageLedger
    journal: RunJournal
    #: the pre-run snapshot and the files the run presents (see ``fawn.runs.workspace``)
    evidence: RunEvidence = field(default_factory=RunEvidence)

    @classmethod
    def of(cls, run: LocalRun, clock: Clock) -> RunScope:
        return cls(
            context=run.spec.options.context(
                thread_id=run.thread_id,
                run_id=run.run_id,
                user_id=run.spec.user_id,
                allowed_tools=None
                if run.spec.allowed_tools is None
                else frozenset(run.spec.allowed_tools),
            ),
            usage=UsageLedger(),
            journal=RunJournal(clock),
        )


def stopped(reason: StopReason) -> Outcome:
    """The outcome of a run stopped on purpose."""
    if reason == "interrupt":
        return Outcome(status="interrupted", stop_reason="cancelled")
    if reason == "rollback":
        return Outcome(status="interrupted", stop_reason="rollback")
    if reason == "lease_lost":
        return Outcome(status="error", stop_reason="lease_lost")
    return Outcome(status="error", stop_reason="shutdown", error=SHUTDOWN_ERROR)


class GraphExecution:
    def __init__(
        self,
        agent: LeadAgent,
        renderer: StreamRenderer,
        *,
        recursion_limit: int,
        workspace: WorkspaceEvidence,
        durability: Durability = "async",
    ) -> None:
        self._agent = agent
        self._renderer = renderer
        self._recursion_limit = recursion_limit
        self._workspace = workspace
        self._durability = durability

    async def run(self, run: LocalRun, scope: RunScope, publisher: RunPublisher) -> Outcome:
        """Stream the graph for ``run`` and read how it ended. Cancellation (a stop request)
        and exceptions propagate: the caller turns them into outcomes."""
        spec = run.spec
        publisher.send(*self._renderer.started(run.run_id, run.thread_id))
        started: dict[str, Any] = {"run_id": run.run_id}
        if scope.context.user_id is not None:  # who ran it (servers with identities)
            started["user_id"] = scope.context.user_id
        scope.journal.note("run_started", started)
        # the files as they are before the graph's first step (a rollback restores them)
        await self._workspace.before(run.thread_id, run.run_id, scope.evidence)
        translator = self._renderer.translator(spec)
        extra: dict[str, Any] = {"durability": spec.durability or self._durability}
        options: dict[str, Any] = {
            "context": scope.context,
            "stream_mode": self._renderer.graph_modes(spec),
            "subgraphs": spec.stream_subgraphs,
            "interrupt_before": spec.interrupt_before,
            "interrupt_after": spec.interrupt_after,
            **extra,
        }
        config = self._config(run, scope)
        callbacks = self._renderer.wants_callbacks(spec)
        if callbacks:
            # The graph's own chunks ride in the root's on_chain_stream events.
            chunks = self._agent.graph.astream_events(
                spec.graph_input(), config, version="v2", **options
            )
        else:
            chunks = self._agent.graph.astream(spec.graph_input(), config, **options)
        run.graph_stream = cast(AsyncGenerator[Any, None], chunks)
        try:
            async for chunk in chunks:
                if not callbacks:
                    pairs = translator.translate(chunk)
                elif _is_graph_chunk(chunk):
                    pairs = translator.translate(chunk["data"]["chunk"])
                else:
                    pairs = translator.translate_callback(chunk)
                for event, data in pairs:
                    publisher.send(event, data)
        except GraphRecursionError as exc:
            return Outcome(status="error", stop_reason="recursion_limit", error=RunError.of(exc))
        return await self._ending(run.thread_id)

    def _config(self, run: LocalRun, scope: RunScope) -> RunnableConfig:
        spec = run.spec
        return {
            "configurable": {
                **(spec.config.get("configurable") or {}),
                **thread_config(run.thread_id, spec.checkpoint)["configurable"],
                "run_id": run.run_id,
            },
            "recursion_limit": int(spec.config.get("recursion_limit") or self._recursion_limit),
            "metadata": {**spec.metadata, "run_id": run.run_id, "thread_id": run.thread_id},
            "callbacks": [scope.usage, scope.journal, scope.evidence.presented],
            "tags": list(spec.config.get("tags") or []),
        }

    async def _ending(self, thread_id: str) -> Outcome:
        snapshot = await self._agent.graph.aget_state(thread_config(thread_id))
        if any(task.interrupts for task in snapshot.tasks) or snapshot.next:
            return Outcome(status="interrupted", stop_reason="interrupt")
        marked = _marked_error(snapshot.values)
        if marked is not None:
            return Outcome(status="error", stop_reason="model_error", error=marked)
        return Outcome(status="success", stop_reason=_stop_reason(snapshot.values))


def _is_graph_chunk(event: Any) -> bool:
    """A callback event carrying a chunk of the graph's own stream (the root's stream)."""
    return event.get("event") == "on_chain_stream" and not event.get("parent_ids")


def _last_ai_kwargs(values: Any) -> dict[str, Any]:
    messages = (values or {}).get("messages") or []
    for message in reversed(messages):
        if getattr(message, "type", None) == "ai":
            return dict(getattr(message, "additional_kwargs", {}) or {})
    return {}


def _marked_error(values: Any) -> RunError | None:
    """Errors the agent's middleware marks on its fallback message (never inferred from prose)."""
    marker = _last_ai_kwargs(values).get("fawn_error")
    if isinstance(marker, dict):
        return RunError(
            error=str(marker.get("error", "ModelError")), message=str(marker.get("message", ""))
        )
    return None


def _stop_reason(values: Any) -> str:
    reason = _last_ai_kwargs(values).get("fawn_stop_reason")
    return str(reason) if reason else "completed"
