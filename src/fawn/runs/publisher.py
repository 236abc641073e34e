"""Publishing one run's events without ever making the run wait for the stream backend.

The executing run hands events to :meth:`RunPublisher.send`, which only queues them; a task
owned by the publisher delivers them in order, numbering them itself (so a retry after a lost
reply duplicates nothing, and a stream lost in a Redis restart is recreated at the same ids).
While the backend is unreachable the events wait, up to ``capacity``; past that the oldest
undelivered ones are dropped and subscribers see a gap (the durable state covers them).
A failing stream therefore never fails a run, and never delays its durable finalization;
a backend failing in a way it does not declare only drops the event it was given.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

from fawn.runs.clock import Clock
from fawn.runs.events import Event
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import StreamClosed, StreamError, StreamUnavailable

log = logging.getLogger(__name__)

_RETRY_FIRST = 0.05
_RETRY_MAX = 1.0


class RunPublisher:
    def __init__(
        self,
        bridge: StreamBridge,
        run_id: str,
        clock: Clock,
        *,
        capacity: int,
        first_id: int = 1,
    ) -> None:
        self._bridge = bridge
        self._run_id = run_id
        self._clock = clock
        self._capacity = capacity
        self._pending: deque[tuple[int, str, Any]] = deque()
        self._next_id = first_id
        self._more = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._deliver(), name=f"fawn-publish-{self._run_id}")

    def send(self, event: str, data: Any) -> None:
        """Queue an event (never waits)."""
        if self._closing:
            return
        self._pending.append((self._next_id, event, data))
        self._next_id += 1
        while len(self._pending) > self._capacity:
            self._pending.popleft()
            self.dropped += 1
        self._idle.clear()
        self._more.set()

    async def finish(self, terminal: list[Event], *, within: float) -> bool:
        """Queue ``terminal`` (error, end), deliver everything, close the stream — trying
        for at most ``within`` seconds of backend outage. True when all of it got through."""
        for event, data in terminal:
            self.send(event, data)
        self._closing = True
        self._more.set()
        delivered = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                await self._idle.wait()
                delivered = await self._close_stream()
        await self.aclose()
        return delivered

    async def aclose(self) -> None:
        """Stop delivering (what is still queued is dropped)."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _close_stream(self) -> bool:
        delay = _RETRY_FIRST
        while True:
            try:
                await self._bridge.close(self._run_id)
                return True
            except StreamUnavailable:
                await self._clock.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)
            except StreamError as exc:  # gone or closed by whoever settled the run
                log.info("stream of run %s not closed: %s", self._run_id, exc)
                return False
            except Exception:  # a broken backend: the run's end stays durable all the same
                log.exception("stream of run %s not closed", self._run_id)
                return False

    async def _deliver(self) -> None:
        delay = _RETRY_FIRST
        while True:
            if not self._pending:
                self._idle.set()
                self._more.clear()
                await self._more.wait()
                continue
            event_id, event, data = self._pending[0]
            try:
                await self._bridge.publish(self._run_id, event, data, event_id=event_id)
            except StreamUnavailable:
                await self._clock.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)
                continue
            except StreamClosed:
                # whoever settled the run (a peer that declared us dead) ended the stream
                self._pending.clear()
                self._closing = True
                continue
            except (StreamError, TypeError, ValueError) as exc:
                log.warning("run %s: stream event %s dropped: %s", self._run_id, event, exc)
                self.dropped += 1
            except Exception:  # a backend failing in a way it does not declare: never fatal
                log.exception("run %s: stream event %s dropped", self._run_id, event)
                self.dropped += 1
            delay = _RETRY_FIRST
            if self._pending and self._pending[0][0] == event_id:
                self._pending.popleft()
