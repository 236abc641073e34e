"""Time, passed in: the run lifecycle never reads the system clock directly, so its timers
(renewals, leases, sweeps, safety polls, retries) can be driven by a fake clock in tests
(``fawn.testing.clock.FakeClock``) instead of waiting on wall time."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall time, timezone-aware UTC (for records)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for intervals)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def wait_or_sleep(event: asyncio.Event, clock: Clock, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` of ``clock`` time passed; True if set."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait((waiter, sleeper), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiter, sleeper):
            task.cancel()
        await asyncio.gather(waiter, sleeper, return_exceptions=True)
    return event.is_set()
