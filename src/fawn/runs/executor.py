"""One claimed run from its first step to its terminal status: execution, then finalization.

Nothing can come between: a stop requested before the body starts is seen when it starts
(the task is never cancelled before its first step, which would skip its body entirely), a
stop during execution becomes the run's outcome, and finalization runs whatever happened.
"""

from __future__ import annotations

import asyncio
import logging

from fawn.runs.clock import Clock
from fawn.runs.execution import GraphExecution, RunScope, stopped
from fawn.runs.finalization import Ending, Finalizer
from fawn.runs.local import LocalRun
from fawn.runs.outcome import Outcome, RunError
from fawn.runs.publisher import RunPublisher
from fawn.streams.bridge import StreamBridge

log = logging.getLogger(__name__)


class RunExecutor:
    def __init__(
        self,
        execution: GraphExecution,
        finalizer: Finalizer,
        bridge: StreamBridge,
        clock: Clock,
        *,
        stream_capacity: int,
    ) -> None:
        self._execution = execution
        self._finalizer = finalizer
        self._bridge = bridge
        self._clock = clock
        self._capacity = stream_capacity

    async def execute(self, run: LocalRun) -> None:
        run.started = True
        scope = RunScope.of(run, self._clock)
        publisher = RunPublisher(self._bridge, run.run_id, self._clock, capacity=self._capacity)
        publisher.start()
        outcome, interrupted_from_outside = await self._outcome(run, scope, publisher)
        ending = Ending(run=run, outcome=outcome, scope=scope, publisher=publisher)
        try:
            await self._finalizer.finalize(ending)
        finally:
            await publisher.aclose()
            run.result = ending.result
            run.end_status = None if ending.lost else ending.status
            run.done.set()
        if interrupted_from_outside:
            raise asyncio.CancelledError

    async def _outcome(
        self, run: LocalRun, scope: RunScope, publisher: RunPublisher
    ) -> tuple[Outcome, bool]:
        """Execute; a stop request, a cancellation or an exception becomes the outcome.
        The second value says the task was cancelled by something other than a stop
        request (it is re-raised once the run is finalized)."""
        outcome: Outcome
        external = False
        try:
            if run.stop is not None:
                outcome = stopped(run.stop)
            elif run.unrunnable is not None:
                error = RunError(error="Unrunnable", message=run.unrunnable)
                outcome = Outcome(status="error", stop_reason="error", error=error)
            else:
                outcome = await self._execution.run(run, scope, publisher)
                _forget_delivered_stop(run)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if run.stop is None:
                external = True
                run.stop = "shutdown"
            if task is not None:
                task.uncancel()
            outcome = stopped(run.stop)
        except Exception as exc:
            log.exception("run %s failed", run.run_id)
            outcome = Outcome(status="error", stop_reason="error", error=RunError.of(exc))
        run.finalizing = True  # no await since the outcome: stop requests cannot land now
        return outcome, external


def _forget_delivered_stop(run: LocalRun) -> None:
    """A stop that cancelled the task but was absorbed inside the graph (which then ended
    normally) must not leave the task marked as cancelling during finalization."""
    task = asyncio.current_task()
    if run.stop is not None and task is not None:
        while task.cancelling():
            task.uncancel()
