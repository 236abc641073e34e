"""Ownership: which worker runs what, and what happens when a worker dies or is cut off.

Each worker registers a row (``workers``) and advances its ``beat`` every
``runs.renew_seconds``. The runs it executes are owned by it (``runs.owner``). Three rules:

- **A peer is dead** when this worker has watched its beat stand still for
  ``runs.lease_seconds`` while itself reaching the database all along (any failure of ours
  restarts every observation), or at once when it ran on this host, in this pid namespace,
  under a pid that no longer exists. Declaring it dead is fenced on the beat we saw, and
  settles its running runs as ``error`` (``orphaned``) in the same transaction. A database
  outage that every worker shares therefore kills nothing, however long it lasts.
- **A worker that cannot renew** for ``runs.outage_tolerance_seconds`` stops its runs itself
  and writes nothing more for them (a peer may be about to take over); ``lease_seconds``
  exceeds that tolerance plus a renewal and a sweep, so it has always stopped first. Back
  in touch, if no peer declared it dead it still owns those runs and settles them itself;
  if one did, it takes part again under the same id with no runs.
- **A worker settles its own dead runs**: one the database says it executes but that has no
  task here (a finalization that failed) is settled at the next sweep. On SQLite, one
  process serves the database: at start, every running run belongs to a process that is gone.

Renewals also pick up cancel requests recorded for our runs whose signal was missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from fawn.config.settings import RunSettings
from fawn.runs.clock import Clock
from fawn.runs.endings import StreamEnder
from fawn.runs.local import LocalRuns
from fawn.runs.outcome import RunError
from fawn.store.errors import StoreError, StoreUnavailable
from fawn.store.run_queue import RunQueue
from fawn.store.runs import RunRecord, RunRepository
from fawn.store.workers import WorkerRecord, WorkerRepository

log = logging.getLogger(__name__)

RECOVERY_REASON = "the server stopped while this run was in progress (recovered at startup)"
LEASE_REASON = "the worker that owned this run stopped renewing its lease"
OUTAGE_REASON = (
    "the worker lost the database for longer than runs.outage_tolerance_seconds and stopped the run"
)
LOST_TRACK_REASON = "the worker executing this run could not finish it"


def _pid_namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "-"
    return "".join(ch for ch in link if ch.isdigit()) or "-"


def _place() -> str:
    return f"{socket.gethostname()}/{_pid_namespace()}"


def new_worker_id() -> str:
    """``<host>/<pid namespace>:<pid>:<nonce>``: the place and pid let a restarted server on
    the same host see at once that an earlier one is gone (a reused pid only delays it)."""
    return f"{_place()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def owner_gone(owner: str | None) -> bool:
    """Whether ``owner`` was a process of this host and pid namespace that no longer exists."""
    if not owner:
        return False
    place, _, rest = owner.partition(":")
    pid, _, _ = rest.partition(":")
    if place != _place() or place.endswith("/-") or not pid.isdigit():
        return False
    return int(pid) != os.getpid() and not _pid_alive(int(pid))


@dataclass(frozen=True, kw_only=True)
class _Seen:
    beat: int | None
    since: float


class Ownership:
    def __init__(
        self,
        *,
        worker_id: str,
        workers: WorkerRepository,
        queue: RunQueue,
        runs: RunRepository,
        local: LocalRuns,
        ender: StreamEnder,
        clock: Clock,
        settings: RunSettings,
        single_process: bool,
    ) -> None:
        self.worker_id = worker_id
        self._workers = workers
        self._queue = queue
        self._runs = runs
        self._local = local
        self._ender = ender
        self._clock = clock
        self._settings = settings
        self._single_process = single_process
        self._last_renewal = clock.monotonic()
        self._seen: dict[str, _Seen] = {}
        self._task: asyncio.Task[None] | None = None
        #: runs we stopped after losing the database, settled once we are back in touch
        self._cut_off: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Register, recover what earlier processes left behind, start renewing."""
        now = self._clock.now()
        await self._workers.register(
            self.worker_id, host=socket.gethostname(), pid=os.getpid(), now=now
        )
        self._last_renewal = self._clock.monotonic()
        if self._single_process:
            orphans = await self._queue.orphan(
                reason=RECOVERY_REASON, now=now, not_owner=self.worker_id
            )
            await self._settled(orphans, RECOVERY_REASON)
            for worker in await self._workers.all():
                if worker.worker_id != self.worker_id and worker.state != "dead":
                    await self._workers.declare_dead(
                        worker.worker_id, beat=worker.beat, reason=RECOVERY_REASON, now=now
                    )
        else:
            await self.sweep(RECOVERY_REASON)
        self._task = asyncio.create_task(self._loop(), name="fawn-ownership")

    async def set_state(self, state: str) -> None:
        with contextlib.suppress(StoreError):
            await self._workers.set_state(self.worker_id, state, self._clock.now())  # type: ignore[arg-type]

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        sweep_due = self._clock.monotonic() + self._settings.sweep_seconds
        while True:
            await self._clock.sleep(self._settings.renew_seconds)
            try:
                await self.renew()
                if self._clock.monotonic() >= sweep_due:
                    sweep_due = self._clock.monotonic() + self._settings.sweep_seconds
                    await self.sweep(LEASE_REASON)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("run ownership upkeep failed")

    # -- our side ----------------------------------------------------------------------------

    async def renew(self) -> None:
        """Advance our beat; on failure, cut ourselves off once the outage lasted too long."""
        try:
            me = await self._workers.heartbeat(self.worker_id, self._clock.now())
            if me is not None:
                await self._apply_cancels()
        except StoreUnavailable as exc:
            self._seen.clear()  # our own view of the others is interrupted too
            outage = self._clock.monotonic() - self._last_renewal
            log.warning("cannot renew (database unreachable for %.0f s): %s", outage, exc)
            if outage > self._settings.outage_tolerance_seconds:
                self._cut_off_runs()
            return
        self._last_renewal = self._clock.monotonic()
        if me is None:
            await self._declared_dead()
        elif self._cut_off:
            await self._settle_cut_off()

    def _cut_off_runs(self) -> None:
        for run in self._local:
            if run.request_stop("lease_lost"):
                log.warning("run %s stopped: this worker lost the database", run.run_id)
            self._cut_off.add(run.run_id)

    async def _settle_cut_off(self) -> None:
        """Back in touch and still ourselves: our stopped runs are ours to settle."""
        ids = sorted(self._cut_off - self._local.ids())
        if ids:
            orphans = await self._queue.orphan(
                reason=OUTAGE_REASON, now=self._clock.now(), run_ids=ids
            )
            await self._settled(orphans, OUTAGE_REASON)
        self._cut_off.difference_update(ids)

    async def _declared_dead(self) -> None:
        """A peer declared us dead and settled our runs: stop them, write nothing, rejoin."""
        log.error("this worker was declared dead by a peer; its runs were settled there")
        for run in self._local:
            run.request_stop("lease_lost")
        self._cut_off.clear()
        await self._workers.revive(self.worker_id, self._clock.now())

    async def _apply_cancels(self) -> None:
        ids = self._local.ids()
        if not ids:
            return
        rows = await self._runs.find_active(run_ids=sorted(ids))
        for row in rows:
            run = self._local.get(row.run_id)
            if run is None:
                continue
            if row.owner != self.worker_id:
                run.request_stop("lease_lost")
            elif row.cancel_action is not None:
                run.request_stop(row.cancel_action)
        for gone in ids - {r.run_id for r in rows}:
            run = self._local.get(gone)
            if run is not None and not run.finalizing:
                run.request_stop("lease_lost")  # settled (or deleted) by someone else

    # -- the others --------------------------------------------------------------------------

    async def sweep(self, reason: str) -> None:
        """Declare dead the peers that are (their runs end ``error`` with ``reason``);
        settle our own runs that have no task here."""
        try:
            await self._reconcile()
            owners = await self._workers.running_owners()
            workers = {w.worker_id: w for w in await self._workers.all()}
        except StoreUnavailable:
            self._seen.clear()
            return
        now_m = self._clock.monotonic()
        for worker_id in sorted(owners | set(workers)):
            if worker_id == self.worker_id:
                continue
            worker = workers.get(worker_id)
            if (
                worker is not None
                and worker.state in ("dead", "stopped")
                and worker_id not in owners
            ):
                continue
            if self._dead(worker_id, worker, now_m):
                await self._bury(worker_id, worker, reason)
        await self._forget_old_rows()

    def _dead(self, worker_id: str, worker: WorkerRecord | None, now_m: float) -> bool:
        beat = worker.beat if worker is not None else None
        if owner_gone(worker_id) or (worker is not None and worker.state in ("dead", "stopped")):
            return True
        seen = self._seen.get(worker_id)
        if seen is None or seen.beat != beat:
            self._seen[worker_id] = _Seen(beat=beat, since=now_m)
            return False
        return now_m - seen.since >= self._settings.lease_seconds

    async def _bury(self, worker_id: str, worker: WorkerRecord | None, reason: str) -> None:
        orphans = await self._workers.declare_dead(
            worker_id,
            beat=worker.beat if worker is not None else None,
            reason=reason,
            now=self._clock.now(),
        )
        if worker is not None and worker.state == "dead" and not orphans:
            # already dead (declared by someone else): its leftovers, if any, are settled
            orphans = await self._queue.orphan(
                reason=reason, now=self._clock.now(), owners=[worker_id]
            )
        self._seen.pop(worker_id, None)
        if orphans:
            log.warning("worker %s is dead: %d run(s) settled", worker_id, len(orphans))
        await self._settled(orphans, reason)

    async def _reconcile(self) -> None:
        """Our running runs in the database that have no task here were lost by a failed
        finalization: settle them (claims in progress are excluded by the claim lock)."""
        async with self._local.claiming:
            mine = await self._runs.find_active(owner=self.worker_id, status=("running",))
            lost = [r.run_id for r in mine if r.run_id not in self._local.ids()]
            lost = [r for r in lost if r not in self._cut_off]
            if not lost:
                return
            orphans = await self._queue.orphan(
                reason=LOST_TRACK_REASON, now=self._clock.now(), run_ids=lost
            )
        await self._settled(orphans, LOST_TRACK_REASON)

    async def _forget_old_rows(self) -> None:
        horizon = self._clock.now() - timedelta(seconds=self._settings.lease_seconds * 10)
        with contextlib.suppress(StoreError):
            await self._workers.forget(("dead", "stopped"), horizon)

    async def _settled(self, orphans: Sequence[RunRecord], reason: str) -> None:
        """End the streams of runs just settled as orphans and wake their waiters."""
        error = RunError(error="RunOrphaned", message=reason)
        for record in orphans:
            log.warning("run %s on thread %s settled: %s", record.run_id, record.thread_id, reason)
            await self._ender.end(record.run_id, record.thread_id, "error", error)
