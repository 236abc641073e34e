"""Waiting for the lifecycle to change, woken by notifications, with a slow safety timer.

Waiters name what they wait for (a run, a thread, the queue) and give a check that reads the
durable truth; a notification about that key (from this process or, through Redis, any
other) wakes them to check again. Since notifications can be lost, a waiter also checks
every ``poll_seconds`` and whenever the notifier reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fawn.runs.clock import Clock, wait_or_sleep
from fawn.streams.notify import Message, Notifier

T = TypeVar("T")

#: a thread's queue or run list changed (admission, a run ended)
QUEUE = "queue"


def run_key(run_id: str) -> str:
    return f"run:{run_id}"


def thread_key(thread_id: str) -> str:
    return f"thread:{thread_id}"


class Wakeups:
    def __init__(self, notifier: Notifier, clock: Clock, *, poll_seconds: float) -> None:
        self._notifier = notifier
        self._clock = clock
        self._poll = poll_seconds
        self._events: dict[str, asyncio.Event] = {}
        notifier.subscribe("run", self._on_run)
        notifier.subscribe("queue", self._on_queue)
        notifier.on_resync(self.wake_all)

    # -- publishing ------------------------------------------------------------------------

    async def run_changed(self, run_id: str, thread_id: str, status: str) -> None:
        """A run was admitted or ended (everyone waiting on it or its thread re-checks)."""
        self.wake(run_key(run_id), thread_key(thread_id))
        await self._notifier.publish(
            "run", {"run_id": run_id, "thread_id": thread_id, "status": status}
        )

    async def queue_changed(self, thread_id: str) -> None:
        """The thread's queue may have runnable work (workers with a free slot claim it)."""
        self.wake(QUEUE, thread_key(thread_id))
        await self._notifier.publish("queue", {"thread_id": thread_id})

    # -- waiting ---------------------------------------------------------------------------

    def event(self, key: str) -> asyncio.Event:
        """The event set by the next notification about ``key``."""
        event = self._events.get(key)
        if event is None or event.is_set():
            event = self._events[key] = asyncio.Event()
        return event

    async def until(self, key: str, check: Callable[[], Awaitable[T | None]]) -> T:
        """Return ``check()``'s first non-None answer, re-checking on every notification
        about ``key`` and at least every ``poll_seconds``."""
        while True:
            event = self.event(key)  # before the check: a change during it is not lost
            found = await check()
            if found is not None:
                return found
            await wait_or_sleep(event, self._clock, self._poll)

    def wake_all(self) -> None:
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    def wake(self, *keys: str) -> None:
        """Wake this process's waiters on ``keys`` (no notification is sent)."""
        for key in keys:
            event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def _on_run(self, message: Message) -> None:
        self.wake(run_key(message.get("run_id", "")), thread_key(message.get("thread_id", "")))

    def _on_queue(self, message: Message) -> None:
        self.wake(QUEUE, thread_key(message.get("thread_id", "")))
