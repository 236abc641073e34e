"""Following runs: a run's stream, and a thread's runs one after another, as typed items.

A follower never ends without the run's ending: when the stream backend cannot be reached
or lost the stream (Redis restarted without persistence), the follower keeps the client's
connection alive with heartbeats, resumes from its cursor when the stream is back, and when
the run has ended meanwhile it reports the ending its durable record holds (:class:`RunEnded`).
Waiting for the next run of a thread is woken by notifications, not by polling.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fawn.runs.clock import Clock, wait_or_sleep
from fawn.runs.errors import InvalidInput
from fawn.runs.local import LocalRuns
from fawn.runs.outcome import RunEnded, RunError
from fawn.runs.shutdown import Shutdown
from fawn.runs.wakeups import Wakeups, run_key, thread_key
from fawn.store.runs import TERMINAL, RunRecord, RunRepository
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import (
    Heartbeat,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
    StreamUnavailable,
)

log = logging.getLogger(__name__)

RunItem = StreamItem | RunEnded

_RETRY_FIRST = 0.1
_RETRY_MAX = 2.0


@dataclass(frozen=True, kw_only=True)
class ThreadItem:
    """An item of a thread's stream: something from the stream of run ``run_id``."""

    run_id: str
    item: StreamEvent | StreamGap | RunEnded


class Following:
    def __init__(
        self,
        *,
        bridge: StreamBridge,
        runs: RunRepository,
        local: LocalRuns,
        wakeups: Wakeups,
        shutdown: Shutdown,
        clock: Clock,
    ) -> None:
        self._bridge = bridge
        self._runs = runs
        self._local = local
        self._wakeups = wakeups
        self._shutdown = shutdown
        self._clock = clock

    async def released(self, run_id: str | None = None) -> None:
        """Return when a follower (of ``run_id``, or of a thread) should let go because this
        worker is shutting down: at once for runs that do not end here, never for a run
        executing here (its stream ends with it)."""
        await self._shutdown.releasing.wait()
        run = self._local.get(run_id) if run_id is not None else None
        if run is not None:
            await wait_forever()

    async def run(
        self, run_id: str, *, after: int | None, heartbeat_seconds: float
    ) -> AsyncIterator[RunItem]:
        """The run's events after ``after``, then live, to its end (or a gap)."""
        cursor = after or 0
        delay = _RETRY_FIRST
        while True:
            try:
                async for item in self._bridge.subscribe(
                    run_id, after=cursor, heartbeat_seconds=heartbeat_seconds
                ):
                    if isinstance(item, StreamEvent):
                        cursor = item.id
                        delay = _RETRY_FIRST
                    yield item
                    if isinstance(item, StreamGap):
                        return
                return
            except (StreamUnavailable, StreamNotFound) as exc:
                log.info("following run %s: %s", run_id, exc)
            ended = await self._ending(run_id)
            if ended is not None:
                yield ended
                return
            yield Heartbeat()
            await wait_or_sleep(self._wakeups.event(run_key(run_id)), self._clock, delay)
            delay = min(delay * 2, _RETRY_MAX)

    async def _ending(self, run_id: str) -> RunEnded | None:
        """How the run ended, from its record; None while it is active (or unknowable)."""
        try:
            record = await self._runs.get(run_id)
        except Exception as exc:  # the database may be down too: keep waiting
            log.info("run %s: record unreadable while its stream is away: %s", run_id, exc)
            return None
        if record is None:
            return RunEnded(run_id=run_id, status="deleted")
        if record.status not in TERMINAL:
            return None
        return RunEnded(run_id=run_id, status=record.status, error=record_error(record))

    async def thread(
        self,
        thread_id: str,
        *,
        cursor: tuple[str, int] | None,
        heartbeat_seconds: float,
    ) -> AsyncIterator[ThreadItem | Heartbeat]:
        """Every run executed on the thread, one after another, until the client leaves."""
        run, after = await self._first_run(thread_id, cursor)
        last_seq = run.seq if run is not None else await self._runs.last_seq(thread_id)
        while True:
            if run is None:
                found = await self._next_run(thread_id, last_seq, heartbeat_seconds)
                if found is None:
                    yield Heartbeat()
                    continue
                run, after = found, None
            async for item in self._thread_run(run, after, heartbeat_seconds):
                yield item
            last_seq, run = run.seq, None

    async def _next_run(
        self, thread_id: str, after_seq: int, heartbeat_seconds: float
    ) -> RunRecord | None:
        """The thread's next run, or None after ``heartbeat_seconds`` without one."""
        event = self._wakeups.event(thread_key(thread_id))
        found = await self._runs.next_on_thread(thread_id, after_seq)
        if found is None:
            await wait_or_sleep(event, self._clock, heartbeat_seconds)
        return found

    async def _first_run(
        self, thread_id: str, cursor: tuple[str, int] | None
    ) -> tuple[RunRecord | None, int | None]:
        if cursor is not None:
            record = await self._runs.get(cursor[0], thread_id)
            if record is None:
                raise InvalidInput(
                    f"Last-Event-ID names run {cursor[0]}, not a run of this thread",
                    field="Last-Event-ID",
                )
            return record, cursor[1]
        active = await self._runs.active(thread_id)
        return (active[0], None) if active else (None, None)

    async def _thread_run(
        self, run: RunRecord, after: int | None, heartbeat_seconds: float
    ) -> AsyncIterator[ThreadItem | Heartbeat]:
        if not await self._bridge.exists(run.run_id) and run.status in TERMINAL:
            # finished and no longer retained: say so, the client reloads durable state
            yield ThreadItem(
                run_id=run.run_id,
                item=RunEnded(run_id=run.run_id, status=run.status, error=record_error(run)),
            )
            return
        async for item in self.run(run.run_id, after=after, heartbeat_seconds=heartbeat_seconds):
            if isinstance(item, Heartbeat):
                yield item
            else:
                yield ThreadItem(run_id=run.run_id, item=item)


def record_error(record: RunRecord) -> RunError | None:
    """The error a failed run's record reports (an orphan says so)."""
    if record.status != "error":
        return None
    kind = "RunOrphaned" if record.stop_reason == "orphaned" else "RunError"
    return RunError(error=kind, message=record.error or "run failed")


async def wait_forever() -> None:
    await asyncio.get_running_loop().create_future()
