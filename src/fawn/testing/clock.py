"""A fake :class:`fawn.runs.clock.Clock`: time moves only when the test says so."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta


class FakeClock:
    """``advance(seconds)`` moves both clocks and wakes every sleeper whose time has come.

    Sleepers wake in deadline order, each given a turn of the event loop, so code that
    sleeps in a loop (a renewal every 5 s) runs once per period it was advanced over.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._wall = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._mono = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> datetime:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._order), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting (cancelled ones included until their time)."""
        return sum(1 for *_, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking sleepers on the way."""
        target = self._mono + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._step_to(deadline)
            if not future.done():
                future.set_result(None)
                for _ in range(5):  # let the woken code run up to its next await
                    await asyncio.sleep(0)
        self._step_to(target)
        await asyncio.sleep(0)

    def _step_to(self, mono: float) -> None:
        if mono > self._mono:
            self._wall += timedelta(seconds=mono - self._mono)
            self._mono = mono
