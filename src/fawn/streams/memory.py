"""In-process stream bridge: one bounded deque per run, wake-ups without polling."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from itertools import islice
from typing import Any

from fawn.config import StreamSettings
from fawn.streams.bridge import check_cursor, check_heartbeat
from fawn.streams.events import (
    Heartbeat,
    StreamClosed,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
)


class _RunStream:
    """One run's retained window plus a broadcast wake-up for its subscribers.

    The wake-up is a single future shared by every waiting subscriber, created only when
    someone waits and resolved (then dropped) by the next publish or close. A publish with
    nobody waiting costs one attribute check.
    """

    __slots__ = ("closed", "events", "latest", "_waiter")

    def __init__(self, retention: int) -> None:
        self.events: deque[StreamEvent] = deque(maxlen=retention)
        self.latest = 0
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None

    def append(self, event: str, data: Any) -> int:
        self.latest += 1
        self.events.append(StreamEvent(self.latest, event, data))
        self._wake()
        return self.latest

    def close(self) -> None:
        self.closed = True
        self._wake()

    def read_after(self, cursor: int) -> list[StreamEvent] | StreamGap:
        """The retained events with id > cursor, copied so the caller may await between them.

        Ids in the window are contiguous, so the answer comes from the right end of the deque
        in O(number of new events) — a live subscriber copies one or two references.
        """
        new = self.latest - cursor
        if new <= 0:
            return []
        if new > len(self.events):
            earliest = self.events[0].id if self.events else None
            return StreamGap(cursor, earliest, self.latest)
        batch = list(islice(reversed(self.events), new))
        batch.reverse()
        return batch

    async def wait(self, seconds: float) -> bool:
        """Wait for the next publish or close; ``False`` when ``seconds`` passed first."""
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        # asyncio.wait (not wait_for) leaves the shared future alone on timeout or
        # cancellation, so one subscriber giving up never disturbs the others.
        done, _ = await asyncio.wait((self._waiter,), timeout=seconds)
        return bool(done)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class MemoryStreamBridge:
    """A :class:`~fawn.streams.bridge.StreamBridge` for one process.

    Cleanup timers are ``loop.call_later`` handles owned by the bridge (keyed by run id) and
    cancelled in :meth:`aclose`: a timer needs no task, so there is nothing to fire and forget.
    """

    def __init__(self, settings: StreamSettings) -> None:
        self._settings = settings
        self._streams: dict[str, _RunStream] = {}
        self._cleanups: dict[str, asyncio.TimerHandle] = {}

    async def open(self, run_id: str) -> None:
        if run_id not in self._streams:
            self._streams[run_id] = _RunStream(self._settings.retention_events)

    async def publish(
        self, run_id: str, event: str, data: Any, *, event_id: int | None = None
    ) -> int:
        stream = self._streams.get(run_id)
        if stream is None and event_id is not None:
            stream = self._streams[run_id] = _RunStream(self._settings.retention_events)
        if stream is None:
            raise StreamNotFound(f"no stream for run {run_id}", run_id=run_id)
        if stream.closed:
            raise StreamClosed(f"the stream of run {run_id} is closed", run_id=run_id)
        if event_id is not None:
            if stream.latest >= event_id:
                return event_id
            stream.latest = max(stream.latest, event_id - 1)
        return stream.append(event, data)

    async def close(self, run_id: str) -> None:
        stream = self._get(run_id)
        if stream.closed:
            return
        stream.close()
        loop = asyncio.get_running_loop()
        self._cleanups[run_id] = loop.call_later(
            self._settings.cleanup_delay_seconds, self._forget, run_id
        )

    async def subscribe(
        self,
        run_id: str,
        *,
        after: int | None = None,
        heartbeat_seconds: float | None = None,
    ) -> AsyncIterator[StreamItem]:
        cursor = check_cursor(after)
        heartbeat = check_heartbeat(heartbeat_seconds, self._settings.heartbeat_seconds)
        # Holding the stream object (not the id) lets a subscriber drain a closed stream even
        # if its cleanup runs meanwhile.
        stream = self._get(run_id)
        while True:
            got = stream.read_after(cursor)
            if isinstance(got, StreamGap):
                yield got
                return
            if got:
                for event in got:
                    yield event
                cursor = got[-1].id
            elif stream.closed:
                return
            elif not await stream.wait(heartbeat):
                yield Heartbeat()

    async def exists(self, run_id: str) -> bool:
        return run_id in self._streams

    async def latest_id(self, run_id: str) -> int | None:
        return self._get(run_id).latest or None

    async def aclose(self) -> None:
        """Cancel cleanup timers and end every live subscription (their streams die with us)."""
        for handle in self._cleanups.values():
            handle.cancel()
        self._cleanups.clear()
        for stream in self._streams.values():
            stream.close()
        self._streams.clear()

    def _get(self, run_id: str) -> _RunStream:
        stream = self._streams.get(run_id)
        if stream is None:
            raise StreamNotFound(f"no stream for run {run_id}", run_id=run_id)
        return stream

    def _forget(self, run_id: str) -> None:
        self._cleanups.pop(run_id, None)
        self._streams.pop(run_id, None)
