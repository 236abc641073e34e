"""Ending the stream of a run that was settled without being executed to its end: queued
runs removed by a cancel or a multitask strategy, and orphans of a dead worker.

Best effort: when the stream backend cannot be reached, followers find the run's ending in
its durable record instead (see :mod:`fawn.runs.following`).
"""

from __future__ import annotations

import logging

from fawn.runs.events import StreamRenderer
from fawn.runs.outcome import EndStatus, RunError
from fawn.runs.wakeups import Wakeups
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import StreamClosed, StreamError, StreamNotFound

log = logging.getLogger(__name__)


class StreamEnder:
    def __init__(self, bridge: StreamBridge, renderer: StreamRenderer, wakeups: Wakeups) -> None:
        self._bridge = bridge
        self._renderer = renderer
        self._wakeups = wakeups

    async def end(
        self, run_id: str, thread_id: str, status: EndStatus, error: RunError | None = None
    ) -> None:
        """Announce the run's end to waiters and its thread's queue, then end its stream."""
        await self._wakeups.run_changed(run_id, thread_id, str(status))
        await self._wakeups.queue_changed(thread_id)
        try:
            if error is not None:
                await self._bridge.publish(run_id, *self._renderer.failed(error))
            await self._bridge.publish(run_id, *self._renderer.ended(run_id, status))
            await self._bridge.close(run_id)
        except (StreamNotFound, StreamClosed):
            return  # never opened, cleaned up, or ended by whoever ran it
        except StreamError as exc:
            log.warning("the stream of run %s was not ended: %s", run_id, exc)
