"""RunService: what the gateway asks of runs, each request delegated to the unit whose job it
is (admission, cancellation, waiting, following, the records). It holds no lifecycle logic
of its own."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig

from fawn.runs.admission import Admission
from fawn.runs.cancellation import Cancellation
from fawn.runs.clock import Clock
from fawn.runs.dispatcher import Dispatcher
from fawn.runs.errors import Conflict, InvalidInput, NotFound
from fawn.runs.following import Following, RunItem, ThreadItem
from fawn.runs.outcome import RunResult
from fawn.runs.shutdown import Shutdown
from fawn.runs.spec import RunSpec
from fawn.runs.threads import ThreadService, is_valid_thread_id
from fawn.runs.waiting import RunWaiter
from fawn.store.errors import RunConflict, StoreError, ThreadNotFound
from fawn.store.run_queue import RunQueue
from fawn.store.runs import (
    TERMINAL,
    CancelAction,
    RunEventEntry,
    RunRecord,
    RunRepository,
    RunStatus,
)
from fawn.store.scope import SYSTEM, Scope
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import Heartbeat

log = logging.getLogger(__name__)


class RunService:
    def __init__(
        self,
        *,
        admission: Admission,
        dispatcher: Dispatcher,
        cancellation: Cancellation,
        waiter: RunWaiter,
        following: Following,
        runs: RunRepository,
        queue: RunQueue,
        threads: ThreadService,
        bridge: StreamBridge,
        shutdown: Shutdown,
        clock: Clock,
        stop_wait_seconds: float,
    ) -> None:
        self._admission = admission
        self._dispatcher = dispatcher
        self._cancellation = cancellation
        self._waiter = waiter
        self._following = following
        self._runs = runs
        self._queue = queue
        self._threads = threads
        self._bridge = bridge
        self._shutdown = shutdown
        self._clock = clock
        self._stop_wait = stop_wait_seconds
        self._tasks: set[asyncio.Task[Any]] = set()

    async def aclose(self) -> None:
        """Wait for the cancels started on behalf of departed clients."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- admission -----------------------------------------------------------------------

    def check(self, spec: RunSpec) -> None:
        self._admission.check(spec)

    async def admit(
        self,
        thread_id: str | None,
        spec: RunSpec,
        *,
        if_not_exists: Literal["create", "reject"] = "reject",
        scope: Scope = SYSTEM,
        thread_metadata: Mapping[str, Any] | None = None,
        thread_stamp: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        run = await self._admission.admit(
            thread_id,
            spec,
            if_not_exists=if_not_exists,
            scope=scope,
            thread_metadata=thread_metadata,
            thread_stamp=thread_stamp,
        )
        started = False
        try:
            started = await self._dispatcher.start_now(run)
        except StoreError as exc:  # admitted all the same: any worker claims it later
            log.warning("run %s not started at once: %s", run.run_id, exc)
        if not started:
            # only now: told before this worker tried, a peer could take a run admitted here
            # while this worker had a slot for it (away from the client that follows it)
            await self._admission.announce(run)
        return run

    # -- records -------------------------------------------------------------------------

    async def get(self, thread_id: str, run_id: str) -> RunRecord:
        # ids we could never have issued are not looked up (PostgreSQL refuses NULs in text)
        known = _is_uuid(run_id) and is_valid_thread_id(thread_id)
        record = await self._runs.get(run_id, thread_id) if known else None
        if record is None:
            raise NotFound(f"run {run_id} not found in thread {thread_id}")
        return record

    async def journal(self, thread_id: str, run_id: str) -> list[RunEventEntry]:
        """The run's journal (written when it finished; empty while it runs)."""
        await self.get(thread_id, run_id)
        return await self._runs.events(run_id)

    async def usage_by_agent(self, runs: Sequence[RunRecord]) -> dict[str, tuple[int, int]]:
        """Each finished run's tokens as (lead agent, sub-agents), from its journal."""
        finished = await self._runs.finished_entries([r.run_id for r in runs])
        split: dict[str, tuple[int, int]] = {}
        for run in runs:
            by_agent = (finished.get(run.run_id) or {}).get("usage_by_agent") or {}
            sub = int((by_agent.get("subagents") or {}).get("total_tokens") or 0)
            split[run.run_id] = (max(run.usage.total_tokens - sub, 0), sub)
        return split

    async def list_page(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None
    ) -> tuple[list[RunRecord], int]:
        """A page of the thread's runs, newest first, and how many match in all."""
        await self._threads.get(thread_id)
        page = await self._runs.page(thread_id, limit=limit, offset=offset, status=status)
        return page, await self._runs.count(thread_id, status=status)

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        record = await self.get(thread_id, run_id)
        if record.status not in TERMINAL or not await self._queue.delete_finished(run_id):
            raise Conflict(f"run {run_id} is {record.status}; cancel it before deleting it")

    # -- cancellation ----------------------------------------------------------------------

    async def cancel_one(
        self, thread_id: str, run_id: str, action: CancelAction, *, wait: bool
    ) -> None:
        record = await self.get(thread_id, run_id)
        if record.status in TERMINAL:
            raise NotFound(f"run {run_id} has already finished ({record.status})")
        await self._cancellation.cancel([run_id], action)
        if wait:
            await self._waiter.finished(run_id)

    async def cancel_many(
        self,
        *,
        thread_id: str | None,
        run_ids: Sequence[str] | None,
        status: str | None,
        action: CancelAction,
        scope: Scope = SYSTEM,
    ) -> None:
        """Cancel the active runs named, of threads ``scope`` reaches only."""
        statuses: tuple[RunStatus, ...]
        if status in (None, "all"):
            statuses = ("pending", "running")
        elif status == "pending":
            statuses = ("pending",)
        elif status == "running":
            statuses = ("running",)
        else:
            raise InvalidInput("status must be pending, running or all", field="status")
        if thread_id is None and run_ids is None and status is None:
            raise InvalidInput("give thread_id, run_ids or status", field="body")
        if thread_id is not None and not is_valid_thread_id(thread_id):
            return
        if run_ids is not None:
            run_ids = [r for r in run_ids if _is_uuid(r)]  # others cannot name a run
        found = await self._runs.find_active(
            thread_id=thread_id, run_ids=run_ids, status=statuses, scope=scope
        )
        if found:
            await self._cancellation.cancel([r.run_id for r in found], action)

    def cancel_soon(self, run_id: str, action: CancelAction) -> None:
        """Cancel from a context that is itself being cancelled (a departed SSE client)."""
        task = asyncio.create_task(self._cancel_quietly(run_id, action), name="fawn-cancel")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _cancel_quietly(self, run_id: str, action: CancelAction) -> None:
        try:
            await self._cancellation.cancel([run_id], action)
        except Exception:
            log.exception("cancelling run %s for a departed client failed", run_id)

    # -- threads ---------------------------------------------------------------------------

    async def delete_thread(self, thread_id: str) -> None:
        """Stop the thread's runs (waiting ``runs.stop_wait_seconds`` at most: a dead
        owner's runs are removed with the thread), release its sandbox, remove it."""
        await self._threads.get(thread_id, checkpoints=False)
        active = await self._runs.active(thread_id)
        if active:
            await self._cancellation.cancel([r.run_id for r in active], "interrupt")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._stop_wait):
                    for record in active:
                        await self._waiter.finished(record.run_id)
        await self._threads.delete(thread_id)

    async def update_state(
        self,
        thread_id: str,
        values: Any,
        *,
        as_node: str | None,
        checkpoint: Mapping[str, Any] | None,
    ) -> RunnableConfig:
        """A state update, atomic with respect to admission: 409 while a run is active, and
        no run is admitted on the thread until the update and its thread row are written."""
        await self._threads.get(thread_id)
        try:
            async with self._queue.idle_thread(thread_id, self._clock.now()) as held:
                return await self._threads.update_state(
                    thread_id, values, as_node=as_node, checkpoint=checkpoint, held=held
                )
        except RunConflict as exc:
            raise Conflict(str(exc), retryable=True) from exc
        except ThreadNotFound as exc:
            raise NotFound(f"thread {thread_id} not found") from exc

    # -- waiting and following -------------------------------------------------------------

    async def result(self, thread_id: str, run_id: str) -> RunResult:
        return await self._waiter.result(thread_id, run_id)

    async def stream_exists(self, run_id: str) -> bool:
        return await self._bridge.exists(run_id)

    def follow_run(
        self, run_id: str, *, after: int | None, heartbeat_seconds: float
    ) -> AsyncIterator[RunItem]:
        return self._following.run(run_id, after=after, heartbeat_seconds=heartbeat_seconds)

    def follow_thread(
        self, thread_id: str, *, cursor: tuple[str, int] | None, heartbeat_seconds: float
    ) -> AsyncIterator[ThreadItem | Heartbeat]:
        return self._following.thread(thread_id, cursor=cursor, heartbeat_seconds=heartbeat_seconds)

    @property
    def shutting_down(self) -> bool:
        """Followers are being let go (a departing follower is then no departed client)."""
        return self._shutdown.releasing.is_set()

    async def released(self, run_id: str | None = None) -> None:
        """Return when a follower should let go because this worker shuts down."""
        await self._following.released(run_id)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
