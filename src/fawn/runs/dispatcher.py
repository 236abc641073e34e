"""The dispatcher: claims runnable runs from the database queue and executes them here.

Queued work belongs to the thread's queue in the database, not to a worker: any live worker
with a free slot claims the oldest runnable run (the first active run of its thread, pending,
not cancelled), in admission order, up to ``runs.max_concurrent`` executing at once. It looks
when told (a local admission or a run ending here, a ``queue`` notification from any worker,
a notifier reconnect) and, as a safety net, every ``runs.poll_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from fawn.runs.clock import Clock, wait_or_sleep
from fawn.runs.executor import RunExecutor
from fawn.runs.local import LocalRun, LocalRuns, StopReason
from fawn.runs.shutdown import Shutdown
from fawn.runs.spec import RunSpec
from fawn.runs.wakeups import QUEUE, Wakeups
from fawn.store.errors import StoreError
from fawn.store.run_queue import Claimed, RunQueue
from fawn.store.runs import RunRecord

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(
        self,
        *,
        queue: RunQueue,
        local: LocalRuns,
        executor: RunExecutor,
        wakeups: Wakeups,
        shutdown: Shutdown,
        clock: Clock,
        owner: str,
        max_concurrent: int,
        poll_seconds: float,
    ) -> None:
        self._queue = queue
        self._local = local
        self._executor = executor
        self._wakeups = wakeups
        self._shutdown = shutdown
        self._clock = clock
        self._owner = owner
        self._max = max_concurrent
        self._poll = poll_seconds
        self._loop_task: asyncio.Task[None] | None = None
        self._runs: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def start(self) -> None:
        self._loop_task = asyncio.create_task(self._loop(), name="fawn-dispatcher")

    async def aclose(self) -> None:
        """Stop claiming; stop what still runs (``shutdown``) and wait for its finalization."""
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        self.stop_all("shutdown")
        if self._runs:
            await asyncio.gather(*self._runs, return_exceptions=True)

    def stop_all(self, reason: StopReason) -> None:
        for run in self._local:
            run.request_stop(reason)

    async def start_now(self, run: RunRecord) -> bool:
        """Start a run admitted here at once if it may start and a slot is free (the run
        stays close to its client, without a notification round trip); else it waits in
        its queue for any worker. True when it started here."""
        if not self._has_slot():
            return False
        async with self._local.claiming:
            # checked again under the lock: the loop may have filled the slot meanwhile
            if not self._has_slot():
                return False
            claimed = await self._queue.claim(
                run.run_id, run.thread_id, self._owner, self._clock.now()
            )
            if claimed is None:
                return False
            self._start(claimed)
        return True

    def _has_slot(self) -> bool:
        return len(self._local) < self._max and not self._shutdown.draining.is_set()

    async def wait_idle(self, seconds: float) -> bool:
        """Wait until nothing executes here, for at most ``seconds``; True if idle."""
        return await wait_or_sleep(self._idle, self._clock, seconds)

    async def _loop(self) -> None:
        while True:
            wake = self._wakeups.event(QUEUE)
            if not self._shutdown.draining.is_set():
                try:
                    await self._fill()
                except StoreError as exc:
                    log.warning("claiming queued runs failed (%s); retrying", exc)
            await wait_or_sleep(wake, self._clock, self._poll)

    async def _fill(self) -> None:
        while len(self._local) < self._max and not self._shutdown.draining.is_set():
            free = self._max - len(self._local)
            candidates = await self._queue.runnable(limit=free * 2)
            if not candidates:
                return
            started = 0
            for candidate in candidates:
                if not self._has_slot():
                    return
                async with self._local.claiming:
                    if not self._has_slot():  # an admission here took it meanwhile
                        return
                    claimed = await self._queue.claim(
                        candidate.run_id, candidate.thread_id, self._owner, self._clock.now()
                    )
                    if claimed is not None:
                        self._start(claimed)
                        started += 1
            if not started:
                return  # other workers took them

    def _start(self, claimed: Claimed) -> None:
        run = LocalRun(record=claimed.run, spec=_spec(claimed))
        if not claimed.spec:
            run.unrunnable = "the run was queued by an older fawn that did not store its request"
        self._local.add(run)
        self._idle.clear()
        task = asyncio.create_task(self._run(run), name=f"fawn-run-{run.run_id}")
        run.task = task
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)

    async def _run(self, run: LocalRun) -> None:
        try:
            await self._executor.execute(run)
        finally:
            self._local.remove(run.run_id)
            if not len(self._local):
                self._idle.set()
            self._wakeups.wake(QUEUE)


def _spec(claimed: Claimed) -> RunSpec:
    if not claimed.spec:
        return RunSpec(assistant_id=claimed.run.assistant_id)
    return RunSpec.from_json(claimed.spec)
