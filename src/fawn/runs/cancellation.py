"""Cancellation is a signal, not a poll.

A cancel is recorded first (``runs.cancel_action``, in the transaction that also ends the
cancelled runs that had not started), then signalled: to this process's executing run at
once, and to every other worker through the notifier (Redis pub/sub), whose owner cancels
the run's task — which kills a running sandbox command with its process group. The record
is the safety net: an owner that missed the signal sees it at its next renewal, and its
completion transaction applies it whatever happened before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import cast

from fawn.runs.clock import Clock
from fawn.runs.endings import StreamEnder
from fawn.runs.local import LocalRuns
from fawn.store.run_queue import Cancelled, RunQueue, Settled
from fawn.store.runs import CancelAction, RunRecord
from fawn.streams.notify import Message, Notifier

log = logging.getLogger(__name__)


class Cancellation:
    def __init__(
        self,
        *,
        queue: RunQueue,
        local: LocalRuns,
        notifier: Notifier,
        ender: StreamEnder,
        clock: Clock,
    ) -> None:
        self._queue = queue
        self._local = local
        self._notifier = notifier
        self._ender = ender
        self._clock = clock
        notifier.subscribe("cancel", self._on_signal)

    async def cancel(self, run_ids: Sequence[str], action: CancelAction) -> Cancelled:
        """Cancel active runs (others are ignored): record, settle, signal."""
        cancelled = await self._queue.cancel(run_ids, action, self._clock.now())
        await self.apply(cancelled.settled, cancelled.marked, action)
        return cancelled

    async def apply(
        self, settled: Sequence[Settled], marked: Sequence[RunRecord], action: CancelAction
    ) -> None:
        """After a transaction ended ``settled`` and marked ``marked``: stop the executing
        ones wherever they run, and end the streams of the others."""
        for run in marked:
            self._stop_here(run.run_id, action)
            await self._notifier.publish("cancel", {"run_id": run.run_id, "action": action})
        for item in settled:
            await self._ender.end(item.run.run_id, item.run.thread_id, item.status)

    def _stop_here(self, run_id: str, action: CancelAction) -> None:
        self._local.signal(run_id, action)

    def _on_signal(self, message: Message) -> None:
        action = message.get("action")
        if action in ("interrupt", "rollback"):
            self._stop_here(message.get("run_id", ""), cast(CancelAction, action))
