"""Finalization: how a run ends, as an ordered list of steps.

The order is the list in :func:`finalization_steps`, read top to bottom::

    close the agent stream → flush the journal → record workspace changes → check delivery
    → persist completion (with the receipt) → remove a stateless run's thread → announce
    the end → publish ``end``

Each step is idempotent and declares whether it needs the run to still be ours: once the
run is lost (a peer declared this worker dead, or this worker cut itself off after a long
database outage) nothing more is written, and whoever settles the run publishes its end.
Durable steps retry through database outages and never wait on the stream; the stream's
``end`` is published only after the terminal status is durable, and a stream failure can
never undo or block what came before it. A failing step stops the steps that need
ownership; the run stays ``running`` under this worker, which settles it at its next sweep.
Adding a step is adding one line to the list.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

from langgraph.types import StateSnapshot

from fawn.agent.graph import LeadAgent
from fawn.agent.serialize import to_jsonable
from fawn.agent.snapshots import pending_interrupts
from fawn.evidence import Changes, EvidenceError
from fawn.runs.clock import Clock
from fawn.runs.errors import NotFound
from fawn.runs.events import Event, StreamRenderer
from fawn.runs.execution import RunScope
from fawn.runs.local import LocalRun
from fawn.runs.outcome import EndStatus, Outcome, RunError, RunResult
from fawn.runs.publisher import RunPublisher
from fawn.runs.rollback import Rollback
from fawn.runs.threads import ThreadService, thread_config
from fawn.runs.wakeups import Wakeups
from fawn.runs.workspace import Receipt, WorkspaceEvidence, failure, receipt_of
from fawn.store.errors import StoreUnavailable
from fawn.store.receipts import DeliveryReceipt
from fawn.store.run_queue import (
    RECEIPT_UNRECORDED,
    Completed,
    Completion,
    RunQueue,
    UnstorableValue,
)
from fawn.store.runs import RunEventEntry, Usage
from fawn.store.threads import ThreadStateSnapshot

log = logging.getLogger(__name__)

T = TypeVar("T")

_RETRY_FIRST = 0.1
_RETRY_MAX = 2.0


class Lost(Exception):
    """The run is no longer this worker's: finalization writes nothing more."""


@dataclass(kw_only=True)
class Ending:
    """A run on its way out: what execution concluded, and what the steps establish."""

    run: LocalRun
    outcome: Outcome
    scope: RunScope
    publisher: RunPublisher
    #: the pre-run state has been restored (a rollback)
    rolled_back: bool = False
    #: the terminal status made durable (``deleted`` after a rollback)
    status: EndStatus | None = None
    result: RunResult | None = None
    lost: bool = False
    #: journal entries written with the terminal status (workspace changes, delivery)
    entries: list[RunEventEntry] = field(default_factory=list)
    #: what the run changed in its files (None: no snapshot before)
    changes: Changes | None = None
    #: the delivery receipt (None: the run never executed, or it is rolled back)
    receipt: Receipt | None = None


class FinalizationStep(Protocol):
    name: str
    #: skipped once the run is lost (another worker settles and ends it)
    needs_ownership: bool

    async def __call__(self, ending: Ending) -> None: ...


def finalization_steps(
    *,
    queue: RunQueue,
    agent: LeadAgent,
    rollback: Rollback,
    workspace: WorkspaceEvidence,
    threads: ThreadService,
    wakeups: Wakeups,
    renderer: StreamRenderer,
    clock: Clock,
    publish_seconds: float,
) -> tuple[FinalizationStep, ...]:
    """The standard finalization, in order."""
    return (
        CloseAgentStream(),
        FlushJournal(queue, clock),
        RecordWorkspaceChanges(workspace, clock),
        CheckDelivery(workspace, clock),
        PersistCompletion(queue, agent, rollback, clock),
        RemoveStatelessThread(threads, clock),
        AnnounceEnd(wakeups),
        PublishEnd(renderer, publish_seconds),
    )


class Finalizer:
    def __init__(self, steps: Sequence[FinalizationStep]) -> None:
        self.steps = tuple(steps)

    async def finalize(self, ending: Ending) -> None:
        for step in self.steps:
            if ending.lost and step.needs_ownership:
                continue
            try:
                await step(ending)
            except Lost:
                log.warning(
                    "run %s: no longer ours at %s; writing nothing more", _id(ending), step.name
                )
                ending.lost = True
            except Exception:
                log.exception("run %s: finalization step %s failed", _id(ending), step.name)
                if step.needs_ownership:
                    ending.lost = True


def _id(ending: Ending) -> str:
    return ending.run.run_id


async def durably(ending: Ending, clock: Clock, op: Callable[[], Awaitable[T]]) -> T:
    """Run ``op`` until it gets through a database outage; :class:`Lost` once this worker
    has stopped owning the run (after a long outage it cuts itself off)."""
    delay = _RETRY_FIRST
    while True:
        if ending.run.fenced:
            raise Lost
        try:
            return await op()
        except StoreUnavailable as exc:
            log.warning(
                "run %s: database unavailable while finishing (%s); retrying", _id(ending), exc
            )
        await clock.sleep(delay)
        delay = min(delay * 2, _RETRY_MAX)


class CloseAgentStream:
    """Close the graph's output stream, so nothing of the graph still runs or writes."""

    name = "close_agent_stream"
    needs_ownership = False

    async def __call__(self, ending: Ending) -> None:
        stream = ending.run.graph_stream
        if stream is not None:
            await stream.aclose()


class FlushJournal:
    """Write what the journal collected (tool calls, warnings, errors)."""

    name = "flush_journal"
    needs_ownership = True

    def __init__(self, queue: RunQueue, clock: Clock) -> None:
        self._queue = queue
        self._clock = clock

    async def __call__(self, ending: Ending) -> None:
        journal = ending.scope.journal
        for note in ending.scope.context.notes:
            journal.note("warning", {"message": note})
        if ending.outcome.error is not None:
            journal.note("error", _error_json(ending.outcome.error))
        entries = list(journal.entries)
        run = ending.run
        written = await durably(
            ending,
            self._clock,
            lambda: self._queue.write_journal(run.run_id, run.owner, entries),
        )
        if not written:
            raise Lost


class RecordWorkspaceChanges:
    """Snapshot the thread's files again and journal what the run added, modified and
    deleted since it started (``workspace_changes``, written with the terminal status)."""

    name = "record_workspace_changes"
    needs_ownership = True

    def __init__(self, workspace: WorkspaceEvidence, clock: Clock) -> None:
        self._workspace = workspace
        self._clock = clock

    async def __call__(self, ending: Ending) -> None:
        evidence = ending.scope.evidence
        if ending.outcome.stop_reason == "rollback":
            return  # its files are about to be restored
        if evidence.before is None and evidence.unavailable is None:
            return  # it never executed (or evidence is off)
        data: dict[str, Any] = {"recorded": False, "reason": evidence.unavailable}
        if evidence.before is not None:
            try:
                changes = await self._workspace.changes(ending.run.thread_id, evidence)
            except (OSError, EvidenceError) as exc:
                log.warning("run %s: its workspace changes cannot be read: %s", _id(ending), exc)
                data["reason"] = f"the workspace snapshot failed: {failure(exc)}"
            else:
                ending.changes = changes
                data = {"recorded": True, **(changes.as_json() if changes else _NO_CHANGES)}
        ending.entries.append(
            RunEventEntry(kind="workspace_changes", data=data, created_at=self._clock.now())
        )


class CheckDelivery:
    """The delivery receipt; a success that produced files under outputs/ without
    presenting them all becomes ``error`` (``delivery_incomplete``), naming them."""

    name = "check_delivery"
    needs_ownership = True

    def __init__(self, workspace: WorkspaceEvidence, clock: Clock) -> None:
        self._workspace = workspace
        self._clock = clock

    async def __call__(self, ending: Ending) -> None:
        evidence = ending.scope.evidence
        if ending.outcome.stop_reason == "rollback" or not self._workspace.enabled:
            return
        if evidence.before is None:
            return  # never executed, or no snapshot: nothing can be claimed either way
        receipt = receipt_of(ending.changes, evidence.presented.paths)
        ending.receipt = receipt
        if receipt.satisfied or not self._workspace.require_delivery:
            return
        if ending.outcome.status != "success":
            return  # a failed or paused run is not claimed to have delivered anything
        message = (
            "the run wrote files to /mnt/user-data/outputs without presenting them with "
            "present_files: " + ", ".join(receipt.unpresented)
        )
        error = RunError(error="DeliveryIncomplete", message=message)
        ending.outcome = Outcome(status="error", stop_reason="delivery_incomplete", error=error)
        ending.entries.append(
            RunEventEntry(kind="error", data=_error_json(error), created_at=self._clock.now())
        )


_NO_CHANGES: dict[str, Any] = {"added": [], "modified": [], "deleted": []}


def _receipt_row(receipt: Receipt | None) -> DeliveryReceipt | None:
    if receipt is None:
        return None
    return DeliveryReceipt(
        presented=receipt.presented,
        produced=receipt.produced,
        matched=receipt.matched,
        satisfied=receipt.satisfied,
    )


class PersistCompletion:
    """The terminal status, the completion data and the thread row, in one transaction.

    A rollback (asked for by the run's own cancel, or recorded while it finished) restores
    the pre-run state first and deletes the run. A final state that cannot be read or stored
    still ends the run: ``error``, with the reason, and the thread row keeps its values.
    """

    name = "persist_completion"
    needs_ownership = True

    def __init__(self, queue: RunQueue, agent: LeadAgent, rollback: Rollback, clock: Clock):
        self._queue = queue
        self._agent = agent
        self._rollback = rollback
        self._clock = clock

    async def __call__(self, ending: Ending) -> None:
        rollback = ending.outcome.stop_reason == "rollback"
        store_values = True
        while True:
            if rollback and not ending.rolled_back:
                await self._restore(ending)
            snapshot, outcome = await self._final_state(ending)
            completion = self._completion(ending, outcome, snapshot if store_values else None)
            try:
                done = await durably(ending, self._clock, partial(self._complete, completion))
            except UnstorableValue as exc:
                if not store_values:
                    raise
                store_values = False
                ending.outcome = _failed(outcome, "UnstorableState", str(exc))
                continue
            if done.result == "rollback_needed":
                rollback = True
                continue
            if done.result == "lost":
                raise Lost
            if done.downgraded is not None:  # the receipt was refused: no proof of delivery
                error = RunError(error="DeliveryUnrecorded", message=done.downgraded)
                outcome = Outcome(status="error", stop_reason=RECEIPT_UNRECORDED, error=error)
            ending.status = done.status
            ending.outcome = outcome
            ending.result = RunResult(state=snapshot, error=outcome.error)
            return

    async def _complete(self, completion: Completion) -> Completed:
        return await self._queue.complete(completion, self._clock.now())

    async def _restore(self, ending: Ending) -> None:
        run = ending.run
        if run.graph_stream is not None:  # the graph ran: undo what it wrote
            await durably(
                ending, self._clock, lambda: self._rollback.restore(run.thread_id, run.run_id)
            )
        ending.rolled_back = True

    async def _final_state(self, ending: Ending) -> tuple[StateSnapshot | None, Outcome]:
        try:
            snapshot = await durably(
                ending,
                self._clock,
                lambda: self._agent.graph.aget_state(thread_config(ending.run.thread_id)),
            )
        except (Lost, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.warning("run %s: its final state cannot be read: %s", _id(ending), exc)
            return None, _failed(
                ending.outcome, "UnreadableState", f"the final state cannot be read: {exc}"
            )
        return snapshot, ending.outcome

    def _completion(
        self, ending: Ending, outcome: Outcome, snapshot: StateSnapshot | None
    ) -> Completion:
        run = ending.run
        usage = ending.scope.usage.totals()
        thread: ThreadStateSnapshot | None = None
        if snapshot is not None:
            try:
                thread = ThreadStateSnapshot(
                    values=to_jsonable(snapshot.values or {}) if snapshot.config else None,
                    interrupts=pending_interrupts(snapshot),
                )
            except (TypeError, ValueError) as exc:
                outcome = _failed(
                    outcome, "UnstorableState", f"the final state cannot be stored: {exc}"
                )
        data: dict[str, Any] = {
            "status": outcome.status,
            "stop_reason": outcome.stop_reason,
            "duration_ms": ending.scope.journal.elapsed_ms,
            "usage": _usage_json(usage),
        }
        subagents = ending.scope.usage.subagent_totals()
        if subagents.total_tokens:
            data["usage_by_agent"] = {
                "lead": _usage_json(ending.scope.usage.lead_totals()),
                "subagents": _usage_json(subagents),
            }
        finished = RunEventEntry(kind="run_finished", data=data, created_at=self._clock.now())
        return Completion(
            run_id=run.run_id,
            thread_id=run.thread_id,
            owner=run.owner,
            status=outcome.status,
            error=outcome.error.message if outcome.error else None,
            stop_reason=outcome.stop_reason,
            usage=usage,
            thread=thread,
            thread_error=_error_json(outcome.error) if outcome.error else None,
            journal=[*ending.entries, finished],
            rolled_back=ending.rolled_back,
            receipt=_receipt_row(ending.receipt),
        )


class RemoveStatelessThread:
    """A stateless run's temporary thread goes (checkpoints, record, files) before ``end``."""

    name = "remove_stateless_thread"
    needs_ownership = True

    def __init__(self, threads: ThreadService, clock: Clock) -> None:
        self._threads = threads
        self._clock = clock

    async def __call__(self, ending: Ending) -> None:
        if not ending.run.spec.delete_thread_on_completion:
            return
        try:
            await durably(ending, self._clock, lambda: self._threads.delete(ending.run.thread_id))
        except NotFound:
            return


class AnnounceEnd:
    """Wake whoever waits for the run (on any worker), and the workers that may now run the
    thread's next queued run."""

    name = "announce_end"
    needs_ownership = True

    def __init__(self, wakeups: Wakeups) -> None:
        self._wakeups = wakeups

    async def __call__(self, ending: Ending) -> None:
        run = ending.run
        await self._wakeups.run_changed(run.run_id, run.thread_id, str(ending.status))
        await self._wakeups.queue_changed(run.thread_id)


class PublishEnd:
    """``error`` (when the run failed) and ``end`` on the run's stream, then close it."""

    name = "publish_end"
    needs_ownership = True

    def __init__(self, renderer: StreamRenderer, publish_seconds: float) -> None:
        self._renderer = renderer
        self._seconds = publish_seconds

    async def __call__(self, ending: Ending) -> None:
        terminal: list[Event] = []
        if ending.outcome.error is not None:
            terminal.append(self._renderer.failed(ending.outcome.error))
        status = ending.status or ending.outcome.status
        terminal.append(self._renderer.ended(ending.run.run_id, status))
        if not await ending.publisher.finish(terminal, within=self._seconds):
            log.warning("run %s: its end could not be published", _id(ending))


def _failed(outcome: Outcome, error: str, message: str) -> Outcome:
    """``outcome`` turned into a failure (an earlier error is kept: it is the cause)."""
    if outcome.status == "error" and outcome.error is not None:
        return outcome
    return Outcome(
        status="error", stop_reason="error", error=RunError(error=error, message=message)
    )


def _error_json(error: RunError) -> dict[str, Any]:
    """The error as the thread row and the journal store it."""
    return {"error": error.error, "message": error.message}


def _usage_json(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
