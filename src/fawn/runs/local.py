"""The runs this process is executing: their tasks and cancel requests (the records live in
the database; this is only the live side)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from fawn.runs.outcome import EndStatus, RunResult
from fawn.runs.spec import RunSpec
from fawn.store.runs import CancelAction, RunRecord

#: why an executing run is stopped: a user's cancel (interrupt or rollback), this worker
#: shutting down, or this worker no longer owning it (it must write nothing more)
StopReason = CancelAction | Literal["shutdown", "lease_lost"]


@dataclass(kw_only=True, eq=False)
class LocalRun:
    record: RunRecord
    spec: RunSpec
    task: asyncio.Task[None] | None = None
    #: the body has begun: from now on a stop request cancels the task
    started: bool = False
    #: finalization has begun: stop requests are left to the durable cancel record
    finalizing: bool = False
    stop: StopReason | None = None
    #: why the run cannot be executed at all (it ends ``error`` with this reason)
    unrunnable: str | None = None
    #: the graph's output stream, once the graph has been started (closed by finalization)
    graph_stream: AsyncGenerator[Any, None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    result: RunResult | None = None
    end_status: EndStatus | None = None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def thread_id(self) -> str:
        return self.record.thread_id

    @property
    def owner(self) -> str:
        return self.record.owner or ""

    @property
    def fenced(self) -> bool:
        """This worker may no longer write anything for the run."""
        return self.stop == "lease_lost"

    def request_stop(self, reason: StopReason) -> bool:
        """Record why the run must stop (the first reason stays, except that losing the
        lease overrides everything) and cancel its task if its body is running.

        A task cancelled before its first step would never run its body, so a request that
        comes before the body began is only recorded: the body sees it when it starts.
        """
        if self.finalizing and reason != "lease_lost":
            return False
        if self.stop is not None and reason != "lease_lost":
            return False
        self.stop = reason
        if self.started and not self.finalizing and self.task is not None:
            self.task.cancel()
        return True


class LocalRuns:
    """The runs executing here, and the results of the last ones that ended here (a
    stateless run's thread is gone when its waiter asks: the answer is kept in memory)."""

    RECENT = 1024
    #: cancel signals kept for runs not registered here (yet)
    SIGNALS = 4096

    def __init__(self) -> None:
        self._runs: dict[str, LocalRun] = {}
        self._recent: OrderedDict[str, RunResult] = OrderedDict()
        self._signals: OrderedDict[str, CancelAction] = OrderedDict()
        #: held from a claim until the claimed run is registered here, and by whoever
        #: compares this registry with the runs the database says we own
        self.claiming = asyncio.Lock()

    def add(self, run: LocalRun) -> None:
        self._runs[run.run_id] = run
        action = self._signals.pop(run.run_id, None)
        if action is not None:
            run.request_stop(action)

    def signal(self, run_id: str, action: CancelAction) -> None:
        """A cancel for ``run_id``: stop it if it executes here, else keep the request a
        while. A run this process claimed is registered only after its claim committed,
        and a cancel that marked it in between was signalled to nobody: registering it
        applies the kept request (every worker keeps every signal; the oldest are dropped)."""
        run = self._runs.get(run_id)
        if run is not None:
            run.request_stop(action)
            return
        self._signals[run_id] = action
        while len(self._signals) > self.SIGNALS:
            self._signals.popitem(last=False)

    def remove(self, run_id: str) -> None:
        run = self._runs.pop(run_id, None)
        if run is not None and run.result is not None:
            self._recent[run_id] = run.result
            while len(self._recent) > self.RECENT:
                self._recent.popitem(last=False)

    def recent(self, run_id: str) -> RunResult | None:
        """The result of a run that ended here lately."""
        return self._recent.get(run_id)

    def get(self, run_id: str) -> LocalRun | None:
        return self._runs.get(run_id)

    def __iter__(self) -> Iterator[LocalRun]:
        return iter(list(self._runs.values()))

    def __len__(self) -> int:
        return len(self._runs)

    def ids(self) -> set[str]:
        return set(self._runs)
