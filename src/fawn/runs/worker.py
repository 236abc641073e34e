"""RunWorker: executes one admitted run and finalizes it.

Order at the end matters: the thread row and the run's terminal status are durable before
``end`` is published, so a client that sees ``end`` and reads the run never sees it running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.errors import GraphRecursionError
from langgraph.types import StateSnapshot

from fawn.agent.context import RunContext
from fawn.agent.graph import LeadAgent
from fawn.agent.serialize import interrupts_json, to_jsonable
from fawn.config.settings import AppConfig
from fawn.runs.errors import NotFound
from fawn.runs.handle import RunHandle, RunOutcome
from fawn.runs.journal import RunJournal, UsageLedger
from fawn.runs.threads import ThreadService, thread_config, thread_row
from fawn.runs.translate import EventTranslator, graph_modes
from fawn.store.checkpoints import Saver
from fawn.store.runs import RunEventEntry, RunRepository, RunStatus, Usage
from fawn.store.threads import ThreadStateSnapshot
from fawn.streams.bridge import StreamBridge

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    status: RunStatus
    error: dict[str, str] | None = None
    stop_reason: str | None = None


@dataclass(kw_only=True)
class RunWorker:
    config: AppConfig
    agent: LeadAgent
    saver: Saver
    runs: RunRepository
    threads: ThreadService
    bridge: StreamBridge
    owner: str

    async def execute(self, handle: RunHandle, wait_turn: Any) -> None:
        """Run to a terminal state. ``wait_turn`` awaits the runs ahead on the thread."""
        scope = _RunScope(
            context=handle.spec.options.context(
                thread_id=handle.thread_id, run_id=handle.run_id, user_id=handle.user_id
            ),
            usage=UsageLedger(),
            journal=RunJournal(),
        )
        snapshot: StateSnapshot | None = None
        try:
            await wait_turn(handle)
            if not await self.runs.start(handle.run_id):
                await self._finalize(
                    handle, Outcome(status="interrupted", stop_reason="cancelled"), scope
                )
                return
            handle.started = True
            scope.journal.note("run_started", {"run_id": handle.run_id})
            await self.bridge.publish(
                handle.run_id,
                "metadata",
                {"run_id": handle.run_id, "thread_id": handle.thread_id, "attempt": 1},
            )
            outcome, snapshot = await self._stream(handle, scope)
        except asyncio.CancelledError:
            outcome = await self._cancelled(handle)
        except Exception as exc:
            log.exception("run %s failed", handle.run_id)
            outcome = Outcome(status="error", error=_error(exc), stop_reason="error")
        await self._finalize(handle, outcome, scope, snapshot)

    async def _stream(
        self, handle: RunHandle, scope: _RunScope
    ) -> tuple[Outcome, StateSnapshot | None]:
        spec = handle.spec
        config: RunnableConfig = {
            "configurable": {
                **(spec.config.get("configurable") or {}),
                **thread_config(handle.thread_id, spec.checkpoint)["configurable"],
                "run_id": handle.run_id,
            },
            "recursion_limit": int(
                spec.config.get("recursion_limit") or self.config.agent.recursion_limit
            ),
            "metadata": {**spec.metadata, "run_id": handle.run_id, "thread_id": handle.thread_id},
            "callbacks": [scope.usage, scope.journal],
            "tags": list(spec.config.get("tags") or []),
        }
        translator = EventTranslator(spec.stream_modes)
        extra: dict[str, Any] = {}
        if spec.durability is not None:
            extra["durability"] = spec.durability
        try:
            async for chunk in self.agent.graph.astream(
                spec.graph_input(),
                config,
                context=scope.context,
                stream_mode=graph_modes(spec.stream_modes),  # type: ignore[arg-type]
                subgraphs=spec.stream_subgraphs,
                interrupt_before=spec.interrupt_before,
                interrupt_after=spec.interrupt_after,
                **extra,
            ):
                for event, data in translator.translate(chunk, spec.stream_subgraphs):
                    await self.bridge.publish(handle.run_id, event, data)
        except GraphRecursionError as exc:
            return Outcome(status="error", error=_error(exc), stop_reason="recursion_limit"), None
        snapshot = await self.agent.graph.aget_state(thread_config(handle.thread_id))
        if any(task.interrupts for task in snapshot.tasks) or snapshot.next:
            return Outcome(status="interrupted", stop_reason="interrupt"), snapshot
        marked = _marked_error(snapshot.values)
        if marked is not None:
            return Outcome(status="error", error=marked, stop_reason="model_error"), snapshot
        return Outcome(status="success", stop_reason=_stop_reason(snapshot.values)), snapshot

    async def _cancelled(self, handle: RunHandle) -> Outcome:
        action = handle.cancel_action
        if action == "rollback":
            if handle.started:
                await self._rollback(handle.thread_id, handle.run_id)
            return Outcome(status="interrupted", stop_reason="rollback")
        if action == "interrupt":
            return Outcome(status="interrupted", stop_reason="cancelled")
        if action == "lease_lost":
            return Outcome(status="error", stop_reason="lease_lost")
        return Outcome(
            status="error",
            error={"error": "ServerShutdown", "message": "the server shut down during the run"},
            stop_reason="shutdown",
        )

    async def _rollback(self, thread_id: str, run_id: str) -> None:
        """Restore the conversation state to before the run (files are not restored).

        The pre-run state is the newest checkpoint this run did not write (its checkpoints
        carry its ``run_id`` in their metadata); it is looked up only when a rollback
        happens, not read ahead on every run. A thread with none is emptied.
        """
        anchor: RunnableConfig | None = None
        # closed before writing: a saver may hold its connection while listing
        listing = cast(
            AsyncGenerator[CheckpointTuple, None], self.saver.alist(thread_config(thread_id))
        )
        async with contextlib.aclosing(listing) as items:
            async for item in items:
                if item.metadata.get("run_id") != run_id:
                    anchor = item.config
                    break
        if anchor is None:
            await self.saver.adelete_thread(thread_id)
        else:
            await self.agent.graph.aupdate_state(anchor, None, as_node="__copy__")

    async def _finalize(
        self,
        handle: RunHandle,
        outcome: Outcome,
        scope: _RunScope,
        snapshot: StateSnapshot | None = None,
    ) -> None:
        """Thread row and the run's terminal status (or its deletion, after a rollback) in
        one transaction, then ``end``: whoever sees the run finished finds the thread
        settled, and whoever sees ``end`` finds both. A worker that lost its lease writes
        neither (a peer owns the run now)."""
        handle.finalizing = True
        run_id, thread_id = handle.run_id, handle.thread_id
        rolled_back = outcome.stop_reason == "rollback"
        try:
            if snapshot is None:
                snapshot = await self.agent.graph.aget_state(thread_config(thread_id))
            values = to_jsonable(snapshot.values or {})
            if outcome.error is not None:
                await self.bridge.publish(run_id, "error", outcome.error)
            if outcome.stop_reason != "lease_lost":
                usage = scope.usage.totals()
                await self.runs.complete(
                    run_id,
                    thread_id,
                    status=outcome.status,
                    thread=_thread_row(snapshot, values, outcome),
                    error=outcome.error["message"] if outcome.error else None,
                    stop_reason=outcome.stop_reason,
                    usage=usage,
                    owner=self.owner,
                    delete_run=rolled_back,
                    journal=_close_journal(scope, outcome, usage),
                )
            if handle.spec.delete_thread_on_completion:
                with contextlib.suppress(NotFound):
                    await self.threads.delete(thread_id)
            handle.outcome = RunOutcome(
                status="deleted" if rolled_back else outcome.status,
                values=_with_interrupts(values, snapshot),
                error=outcome.error,
            )
            await self.bridge.publish(
                run_id, "end", {"run_id": run_id, "status": handle.outcome.status}
            )
            await self.bridge.close(run_id)
        finally:
            handle.done.set()

    async def final_values(self, thread_id: str) -> Any:
        """What ``wait``/``join`` answer for a finished run: values plus pending interrupts."""
        snapshot = await self.agent.graph.aget_state(thread_config(thread_id))
        return _with_interrupts(to_jsonable(snapshot.values or {}), snapshot)


def _with_interrupts(values: dict[str, Any], snapshot: StateSnapshot) -> dict[str, Any]:
    interrupts = [i for task in snapshot.tasks for i in task.interrupts]
    if not interrupts:
        return values
    return {**values, "__interrupt__": interrupts_json(interrupts)}


def _thread_row(
    snapshot: StateSnapshot, values: dict[str, Any], outcome: Outcome
) -> ThreadStateSnapshot:
    """The thread row a finished run leaves behind."""
    if outcome.status == "error":
        return thread_row(snapshot, values, status="error", error=outcome.error)
    if outcome.status == "interrupted" and outcome.stop_reason != "rollback":
        # cancelled, or paused at an interrupt() or a breakpoint (static breakpoints leave
        # no Interrupt objects behind, only ``next``): LangGraph calls both interrupted
        return thread_row(snapshot, values, status="interrupted")
    return thread_row(snapshot, values)


@dataclass(frozen=True, kw_only=True)
class _RunScope:
    """What one execution collects besides state: its context (with the agent's notes), the
    token usage ledger and the journal."""

    context: RunContext
    usage: UsageLedger
    journal: RunJournal


def _close_journal(scope: _RunScope, outcome: Outcome, usage: Usage) -> list[RunEventEntry]:
    journal = scope.journal
    for note in scope.context.notes:
        journal.note("warning", {"message": note})
    if outcome.error is not None:
        journal.note("error", dict(outcome.error))
    journal.note(
        "run_finished",
        {
            "status": outcome.status,
            "stop_reason": outcome.stop_reason,
            "duration_ms": journal.elapsed_ms,
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
        },
    )
    return journal.entries


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": type(exc).__name__, "message": str(exc) or type(exc).__name__}


def _last_ai_kwargs(values: Any) -> dict[str, Any]:
    messages = (values or {}).get("messages") or []
    for message in reversed(messages):
        if getattr(message, "type", None) == "ai":
            return dict(getattr(message, "additional_kwargs", {}) or {})
    return {}


def _marked_error(values: Any) -> dict[str, str] | None:
    """Errors the agent's middleware marks on its fallback message (never inferred from prose)."""
    marker = _last_ai_kwargs(values).get("fawn_error")
    if isinstance(marker, dict):
        return {
            "error": str(marker.get("error", "ModelError")),
            "message": str(marker.get("message", "")),
        }
    return None


def _stop_reason(values: Any) -> str:
    reason = _last_ai_kwargs(values).get("fawn_stop_reason")
    return str(reason) if reason else "completed"
