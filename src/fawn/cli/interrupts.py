"""Ctrl-C while a run streams: the first cancels the run, the second stops the command."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Iterator
from typing import Any


class Interrupts:
    """Counts SIGINTs during a block; the first calls ``on_first``, the second cancels ``task``."""

    def __init__(self, task: asyncio.Future[Any], on_first: Callable[[], Awaitable[None]]) -> None:
        self._task = task
        self._on_first = on_first
        self.count = 0
        self._pending: set[asyncio.Task[None]] = set()

    def _signalled(self) -> None:
        self.count += 1
        if self.count == 1:
            job = asyncio.ensure_future(self._on_first())
            self._pending.add(job)
            job.add_done_callback(self._pending.discard)
        else:
            self._task.cancel()

    async def drain(self) -> None:
        """Wait for the cancel request the first Ctrl-C sent, so it is never dropped."""
        for job in list(self._pending):
            with contextlib.suppress(Exception):
                await job

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._signalled)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGINT)
