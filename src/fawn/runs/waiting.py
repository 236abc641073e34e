"""Waiting for a run to end, on any worker, and what ``runs.wait``/``join`` answer.

A run executing here is awaited directly; one executing elsewhere (or still queued) is
awaited through notifications (the ``run`` topic, sent when it ends), re-reading its record
on each and on a slow safety timer.
"""

from __future__ import annotations

from fawn.agent.graph import LeadAgent
from fawn.runs.errors import Draining
from fawn.runs.following import record_error
from fawn.runs.local import LocalRuns
from fawn.runs.outcome import RunResult
from fawn.runs.shutdown import Shutdown
from fawn.runs.threads import thread_config
from fawn.runs.wakeups import Wakeups, run_key
from fawn.store.runs import TERMINAL, RunRecord, RunRepository


class RunWaiter:
    def __init__(
        self,
        *,
        runs: RunRepository,
        local: LocalRuns,
        wakeups: Wakeups,
        agent: LeadAgent,
        shutdown: Shutdown,
    ) -> None:
        self._runs = runs
        self._local = local
        self._wakeups = wakeups
        self._agent = agent
        self._shutdown = shutdown

    async def finished(self, run_id: str) -> RunRecord | None:
        """Wait until the run is terminal (its record) or gone (None: deleted)."""
        local = self._local.get(run_id)
        if local is not None:
            await local.done.wait()
        gone: list[None] = []

        async def check() -> RunRecord | list[None] | None:
            record = await self._runs.get(run_id)
            if record is None:
                return gone
            return record if record.status in TERMINAL else None

        found = await self._wakeups.until(run_key(run_id), check)
        return found if isinstance(found, RunRecord) else None

    async def result(self, thread_id: str, run_id: str) -> RunResult:
        """The thread's state after the run (values and pending interrupts), or its error.

        Raises :class:`Draining` when this worker shuts down before a run that does not end
        here has ended (the client reconnects to another worker).
        """
        local = self._local.get(run_id)
        if local is not None:
            await local.done.wait()
            if local.result is not None:
                return local.result
        elif self._shutdown.releasing.is_set():
            raise Draining("this worker is shutting down; join the run on another worker")
        record = await self.finished(run_id)
        recent = self._local.recent(run_id)
        if recent is not None:
            return recent
        error = record_error(record) if record is not None else None
        if error is not None:
            return RunResult(state=None, error=error)
        state = await self._agent.graph.aget_state(thread_config(thread_id))
        return RunResult(state=state)
