"""Starting, draining and stopping this worker's part of the run lifecycle.

Drain (on SIGTERM, before the HTTP server stops): admission closes (503 with
``Retry-After``) and nothing more is claimed here, so queued runs stay in their threads'
queues for the other workers (told at once); running runs get ``runs.drain_seconds`` to
finish, then are stopped (``error``, ``ServerShutdown``) and get ``runs.stop_wait_seconds``
to finalize; finally the
followers of runs that do not end here let go, so their clients reconnect elsewhere.
"""

from __future__ import annotations

import logging

from fawn.runs.dispatcher import Dispatcher
from fawn.runs.ownership import Ownership
from fawn.runs.service import RunService
from fawn.runs.shutdown import Shutdown
from fawn.runs.wakeups import Wakeups
from fawn.runs.workspace import WorkspaceEvidence
from fawn.streams.notify import Notifier

log = logging.getLogger(__name__)


class RunLifecycle:
    def __init__(
        self,
        *,
        ownership: Ownership,
        dispatcher: Dispatcher,
        service: RunService,
        wakeups: Wakeups,
        notifier: Notifier,
        shutdown: Shutdown,
        drain_seconds: float,
        stop_wait_seconds: float,
        workspace: WorkspaceEvidence | None = None,
    ) -> None:
        self._workspace = workspace
        self._ownership = ownership
        self._dispatcher = dispatcher
        self._service = service
        self._wakeups = wakeups
        self._notifier = notifier
        self._shutdown = shutdown
        self._drain_seconds = drain_seconds
        self._stop_wait_seconds = stop_wait_seconds

    @property
    def worker_id(self) -> str:
        """This worker's id (the ``owner`` of the runs it executes)."""
        return self._ownership.worker_id

    async def start(self) -> None:
        await self._ownership.start()
        self._dispatcher.start()

    async def drain(self) -> None:
        """Stop admitting and claiming, let running runs finish (up to the drain time),
        hand queued runs to the other workers, release the remaining followers."""
        if self._shutdown.draining.is_set():
            return
        self._shutdown.draining.set()
        log.info("draining: no new runs; waiting up to %gs for running ones", self._drain_seconds)
        await self._ownership.set_state("draining")
        await self._notifier.publish("queue", {"thread_id": ""})  # peers: claim what we leave
        if not await self._dispatcher.wait_idle(self._drain_seconds):
            log.warning("drain time is over: stopping the runs still executing")
            self._dispatcher.stop_all("shutdown")
            await self._dispatcher.wait_idle(self._stop_wait_seconds)
        self._shutdown.releasing.set()
        self._wakeups.wake_all()

    async def aclose(self) -> None:
        self._shutdown.draining.set()
        self._shutdown.releasing.set()
        try:
            await self._dispatcher.aclose()
            await self._service.aclose()
            await self._ownership.set_state("stopped")
            await self._ownership.aclose()
        finally:
            if self._workspace is not None:
                self._workspace.close()
