"""The two moments of a graceful shutdown, shared by the parts that react to them."""

from __future__ import annotations

import asyncio


class Shutdown:
    def __init__(self) -> None:
        #: no new run is admitted or claimed here
        self.draining = asyncio.Event()
        #: followers of runs that do not end on this worker let go now (their clients
        #: reconnect to another worker)
        self.releasing = asyncio.Event()
