"""Admission: a validated request becomes a pending run in its thread's queue.

What can be refused is refused before anything exists (the model, breakpoints naming nodes
the graph does not have). The run's stream is opened first, so a stream backend that cannot
be reached refuses the request (503) with nothing stored; then one transaction finds or
creates the thread, applies the multitask strategy and appends the run (a database that
cannot be reached refuses it too, and nothing is left behind, not even a stateless run's
temporary thread). Then the runs the strategy stopped are signalled. Telling the workers
that the queue moved (:meth:`Admission.announce`) is the caller's next step, once this
worker tried to start the run itself (:meth:`fawn.runs.service.RunService.admit`).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Collection, Mapping
from typing import Any, Literal

from fawn.agent.models import ModelFactory
from fawn.runs.cancellation import Cancellation
from fawn.runs.clock import Clock
from fawn.runs.errors import Conflict, Draining, InvalidInput, NotFound
from fawn.runs.shutdown import Shutdown
from fawn.runs.spec import RunSpec
from fawn.runs.threads import check_thread_id, is_valid_thread_id
from fawn.runs.wakeups import Wakeups
from fawn.store.errors import CheckpointModeMismatch, RunConflict, ThreadNotFound
from fawn.store.run_queue import NewRun, RunQueue
from fawn.store.runs import CancelAction, RunRecord
from fawn.store.scope import SYSTEM, Scope
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import StreamError

#: metadata of the temporary thread behind a stateless run
STATELESS = {"stateless": True}


class Admission:
    def __init__(
        self,
        *,
        queue: RunQueue,
        models: ModelFactory,
        graph_nodes: Collection[str],
        bridge: StreamBridge,
        cancellation: Cancellation,
        wakeups: Wakeups,
        shutdown: Shutdown,
        clock: Clock,
    ) -> None:
        self._queue = queue
        self._models = models
        self._nodes = graph_nodes
        self._bridge = bridge
        self._cancellation = cancellation
        self._wakeups = wakeups
        self._shutdown = shutdown
        self._clock = clock

    def check(self, spec: RunSpec) -> None:
        """What can be refused before anything exists: the model (unknown, or none
        configured) and breakpoints naming nodes the graph does not have."""
        self._models.settings(spec.options.model_name)
        for name in ("interrupt_before", "interrupt_after"):
            value = getattr(spec, name)
            if isinstance(value, list):
                unknown = [n for n in value if n not in self._nodes]
                if unknown:
                    known = ", ".join(n for n in self._nodes if not n.startswith("__"))
                    raise InvalidInput(
                        f"{name}: unknown node(s) {', '.join(unknown)}; nodes: {known}",
                        field=name,
                    )

    async def admit(
        self,
        thread_id: str | None,
        spec: RunSpec,
        *,
        if_not_exists: Literal["create", "reject"] = "reject",
        scope: Scope = SYSTEM,
        thread_metadata: Mapping[str, Any] | None = None,
        thread_stamp: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """Admit a run on ``thread_id`` (``None``: a stateless run on a temporary thread),
        which ``scope`` must reach; a thread created for it belongs to ``scope.user_id`` and
        carries ``thread_metadata``. ``thread_stamp`` is server-owned metadata written onto
        the thread, new or not (which graph and assistant ran on it)."""
        if self._shutdown.draining.is_set():
            raise Draining("this worker is shutting down and admits no new runs; retry")
        self.check(spec)
        extra = dict(thread_metadata or {})
        if thread_id is None:
            target, create = str(uuid.uuid4()), {**extra, **STATELESS}
        elif if_not_exists == "create":
            target, create = check_thread_id(thread_id), extra
        elif is_valid_thread_id(thread_id):
            target, create = thread_id, None
        else:  # an id no thread can have (PostgreSQL refuses some of them outright)
            raise NotFound(f"thread {thread_id} not found")
        run_id = str(uuid.uuid4())
        await self._bridge.open(run_id)
        try:
            admitted = await self._queue.admit(
                NewRun(
                    run_id=run_id,
                    thread_id=target,
                    assistant_id=spec.assistant_id,
                    metadata=spec.metadata,
                    kwargs=spec.kwargs_json(),
                    multitask_strategy=spec.multitask_strategy,
                    spec=spec.to_json(),
                    user_id=spec.user_id,
                    thread_stamp=dict(thread_stamp or {}),
                ),
                now=self._clock.now(),
                create_thread=create,
                scope=scope,
            )
        except BaseException as exc:
            with contextlib.suppress(StreamError):
                await self._bridge.close(run_id)  # expires after the cleanup delay
            if isinstance(exc, RunConflict):
                raise Conflict(str(exc), retryable=True) from exc
            if isinstance(exc, ThreadNotFound):
                raise NotFound(f"thread {target} not found") from exc
            if isinstance(exc, CheckpointModeMismatch):
                raise Conflict(str(exc)) from exc
            raise
        strategy = spec.multitask_strategy
        if strategy == "interrupt" or strategy == "rollback":
            action: CancelAction = strategy
            await self._cancellation.apply(admitted.settled, admitted.marked, action)
        await self._wakeups.run_changed(run_id, target, "pending")
        return admitted.run

    async def announce(self, run: RunRecord) -> None:
        """Tell every worker that ``run``'s thread queue has work (it did not start here)."""
        await self._wakeups.queue_changed(run.thread_id)
