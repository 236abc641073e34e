"""RunManager: admission, per-thread ordering, cancellation, leases and recovery.

Orphans. A run row names its owner, ``<host>/<pid namespace>:<pid>:<nonce>``, and carries a
lease the owner renews every ``lease_seconds / 3``. An active run is an orphan, marked
``error`` with a reason and its thread freed, when

- the database is SQLite: one process serves it, so at startup every active run is left over
  from a process that is gone;
- its lease expired (checked at startup and every ``sweep_seconds``): the owner stopped
  renewing, wherever it ran;
- its owner ran on this host, in this pid namespace, under a pid that no longer exists:
  a crashed and restarted server recovers its runs at once instead of a lease later. The pid
  namespace in the id keeps containers that share a hostname (host networking) from judging
  each other's pids. A reused pid only makes us wait for the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, Literal

from fawn.agent.models import ModelFactory
from fawn.runs.errors import Conflict, InvalidInput, NotFound
from fawn.runs.handle import CancelAction, RunHandle, RunOutcome
from fawn.runs.spec import RunSpec
from fawn.runs.thread_stream import ThreadEvent, follow_thread
from fawn.runs.threads import check_thread_id, is_valid_thread_id
from fawn.runs.worker import RunWorker
from fawn.store.errors import RunConflict
from fawn.store.runs import TERMINAL, NewRun, RunEventEntry, RunRecord, RunRepository, RunStatus
from fawn.store.types import utcnow
from fawn.streams.events import Heartbeat, StreamError

log = logging.getLogger(__name__)

RECOVERY_REASON = "the server stopped while this run was in progress (recovered at startup)"
LEASE_REASON = "the worker that owned this run stopped renewing its lease"


def _pid_namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        return "-"
    return "".join(ch for ch in link if ch.isdigit()) or "-"


def _place() -> str:
    return f"{socket.gethostname()}/{_pid_namespace()}"


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


def _lease_expired(record: RunRecord, now: datetime) -> bool:
    return record.lease_expires_at is None or record.lease_expires_at < now


class RunManager:
    def __init__(
        self,
        worker: RunWorker,
        runs: RunRepository,
        models: ModelFactory,
        *,
        single_process: bool,
    ) -> None:
        self._worker = worker
        self._runs = runs
        self._models = models
        self._single_process = single_process
        self._handles: dict[str, RunHandle] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._settings = worker.config.runs
        self.owner = worker.owner

    @staticmethod
    def new_owner_id() -> str:
        return f"{_place()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        everything = self._single_process
        now = utcnow()
        recovered = await self._runs.recover_orphans(
            reason=RECOVERY_REASON,
            is_orphan=lambda r: everything or _lease_expired(r, now) or owner_gone(r.owner),
        )
        await self._settle_orphans(recovered, RECOVERY_REASON)
        self._spawn(self._lease_loop())

    async def _settle_orphans(self, orphans: Sequence[RunRecord], reason: str) -> None:
        """After the store marked runs of a dead owner ``error``: copy each thread's latest
        state onto its row (unless another run of it is still queued: the thread stays busy),
        and close the streams left open, so followers of those runs (through a shared Redis
        bridge, on any worker) see ``error`` and ``end`` instead of heartbeats forever."""
        bridge = self._worker.bridge
        for rec in orphans:
            log.warning("run %s on thread %s marked error: %s", rec.run_id, rec.thread_id, reason)
            if not await self._runs.active(rec.thread_id):
                await self._worker.threads.refresh(
                    rec.thread_id,
                    status="error",
                    error={"error": "RunOrphaned", "message": reason},
                )
            try:
                if not await bridge.exists(rec.run_id):
                    continue
                await bridge.publish(
                    rec.run_id, "error", {"error": "RunOrphaned", "message": reason}
                )
                await bridge.publish(rec.run_id, "end", {"run_id": rec.run_id, "status": "error"})
                await bridge.close(rec.run_id)
            except StreamError:  # closed meanwhile, or cleaned up: nothing left to end
                continue

    async def aclose(self) -> None:
        for handle in list(self._handles.values()):
            handle.request_cancel("shutdown")
        for task in list(self._tasks):
            if task.get_name().startswith("fawn-lease"):
                task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Any, name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name or f"fawn-lease-{id(coro)}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- admission ---------------------------------------------------------------------------

    def check(self, spec: RunSpec) -> None:
        """What can be refused before anything exists: the model (unknown, or none
        configured) and breakpoints naming nodes the graph does not have."""
        self._models.settings(spec.options.model_name)
        nodes = set(self._worker.agent.graph.nodes)
        for name in ("interrupt_before", "interrupt_after"):
            value = getattr(spec, name)
            if isinstance(value, list):
                unknown = [n for n in value if n not in nodes]
                if unknown:
                    known = ", ".join(n for n in nodes if not n.startswith("__"))
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
    ) -> RunRecord:
        """Check the spec, find (or create) the thread, submit. ``thread_id=None`` is a
        stateless run on a temporary thread, removed again if the run is refused."""
        self.check(spec)
        threads = self._worker.threads
        if thread_id is None:
            target = (await threads.create(None, {"stateless": True}, "raise")).thread_id
        else:
            target = await self._ensure_thread(thread_id, if_not_exists)
        try:
            return await self.submit(target, spec)
        except BaseException:
            if thread_id is None:
                with contextlib.suppress(NotFound):
                    await threads.delete(target)
            raise

    async def _ensure_thread(self, thread_id: str, if_not_exists: str) -> str:
        threads = self._worker.threads
        try:
            await threads.get(thread_id)
        except NotFound:
            if if_not_exists != "create":
                raise
            check_thread_id(thread_id)
            await threads.create(thread_id, None, "do_nothing")
        return thread_id

    async def submit(
        self, thread_id: str, spec: RunSpec, *, user_id: str | None = None
    ) -> RunRecord:
        run_id = str(uuid.uuid4())
        try:
            admission = await self._runs.admit(
                NewRun(
                    run_id=run_id,
                    thread_id=thread_id,
                    assistant_id=spec.assistant_id,
                    metadata=spec.metadata,
                    kwargs=spec.kwargs_json(),
                    multitask_strategy=spec.multitask_strategy,
                    owner=self.owner,
                    lease_seconds=self._settings.lease_seconds,
                )
            )
        except RunConflict as exc:
            raise Conflict(str(exc), retryable=True) from exc
        await self._worker.bridge.open(run_id)
        ahead = [r.run_id for r in admission.ahead]
        handle = RunHandle(
            run_id=run_id, thread_id=thread_id, spec=spec, ahead=ahead, user_id=user_id
        )
        self._handles[run_id] = handle
        if spec.multitask_strategy in ("interrupt", "rollback") and ahead:
            await self.cancel(ahead, spec.multitask_strategy)
        task = self._spawn(self._run(handle), name=f"fawn-run-{run_id}")
        handle.task = task
        return admission.run

    async def _run(self, handle: RunHandle) -> None:
        try:
            await self._worker.execute(handle, self._wait_turn)
        finally:
            self._handles.pop(handle.run_id, None)

    async def _wait_turn(self, handle: RunHandle) -> None:
        for run_id in handle.ahead:
            await self.wait_finished(run_id)

    # -- observation -------------------------------------------------------------------------

    def handle(self, run_id: str) -> RunHandle | None:
        return self._handles.get(run_id)

    def follow_thread(
        self,
        thread_id: str,
        *,
        modes: frozenset[str],
        cursor: tuple[str, int] | None,
        heartbeat_seconds: float,
    ) -> AsyncIterator[ThreadEvent | Heartbeat]:
        """Every run executed on the thread, one after another (see thread_stream)."""
        return follow_thread(
            self._runs,
            self._worker.bridge,
            thread_id,
            modes=modes,
            cursor=cursor,
            heartbeat_seconds=heartbeat_seconds,
        )

    async def wait_finished(self, run_id: str) -> RunOutcome | None:
        """Wait until the run is terminal (or deleted). The outcome when it ran here."""
        handle = self._handles.get(run_id)
        if handle is not None:
            await handle.done.wait()
            return handle.outcome
        delay = 0.02
        while True:
            record = await self._runs.get(run_id)
            if record is None or record.status in TERMINAL:
                return None
            handle = self._handles.get(run_id)
            if handle is not None:
                await handle.done.wait()
                return handle.outcome
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)

    async def result(self, thread_id: str, run_id: str) -> Any:
        """What ``runs.wait``/``join`` answer: the final values, or ``{"__error__": ...}``."""
        outcome = await self.wait_finished(run_id)
        if outcome is not None:
            return {"__error__": outcome.error} if outcome.error else outcome.values
        record = await self._runs.get(run_id)
        if record is not None and record.status == "error":
            kind = "RunOrphaned" if record.stop_reason == "orphaned" else "RunError"
            return {"__error__": {"error": kind, "message": record.error or "run failed"}}
        return await self._worker.final_values(thread_id)

    async def get(self, thread_id: str, run_id: str) -> RunRecord:
        # ids we could never have issued are not looked up (PostgreSQL refuses NULs in text)
        known = _is_uuid(run_id) and is_valid_thread_id(thread_id)
        record = await self._runs.get(run_id, thread_id) if known else None
        if record is None:
            raise NotFound(f"run {run_id} not found in thread {thread_id}")
        return record

    async def journal(self, thread_id: str, run_id: str) -> list[RunEventEntry]:
        """The run's journal (written when it finished; empty while it runs)."""
        await self.get(thread_id, run_id)
        return await self._runs.events(run_id)

    async def list_page(
        self, thread_id: str, *, limit: int, offset: int, status: RunStatus | None
    ) -> tuple[list[RunRecord], int]:
        """A page of the thread's runs, newest first, and how many match in all."""
        await self._worker.threads.get(thread_id)
        page = await self._runs.page(thread_id, limit=limit, offset=offset, status=status)
        return page, await self._runs.count(thread_id, status=status)

    # -- cancellation ----------------------------------------------------------------------

    async def cancel(self, run_ids: Sequence[str], action: CancelAction) -> list[str]:
        """Cancel active runs; local ones at once, remote ones through their row."""
        remote: list[str] = []
        cancelled: list[str] = []
        for run_id in run_ids:
            handle = self._handles.get(run_id)
            if handle is not None:
                handle.request_cancel(action)
                cancelled.append(run_id)
            else:
                remote.append(run_id)
        if remote:
            rows = await self._runs.request_cancel(remote, action)
            cancelled.extend(r.run_id for r in rows if r.status not in TERMINAL)
        return cancelled

    async def cancel_one(
        self, thread_id: str, run_id: str, action: CancelAction, *, wait: bool
    ) -> None:
        record = await self.get(thread_id, run_id)
        if record.status in TERMINAL:
            raise NotFound(f"run {run_id} has already finished ({record.status})")
        await self.cancel([run_id], action)
        if wait:
            await self.wait_finished(run_id)

    async def cancel_many(
        self,
        *,
        thread_id: str | None,
        run_ids: Sequence[str] | None,
        status: str | None,
        action: CancelAction,
    ) -> None:
        statuses: tuple[RunStatus, ...]
        if status in (None, "all"):
            statuses = ("pending", "running")
        elif status in ("pending", "running"):
            statuses = (status,)  # type: ignore[assignment]
        else:
            raise InvalidInput("status must be pending, running or all", field="status")
        if thread_id is None and run_ids is None and status is None:
            raise InvalidInput("give thread_id, run_ids or status", field="body")
        if thread_id is not None and not is_valid_thread_id(thread_id):
            return
        if run_ids is not None:
            run_ids = [r for r in run_ids if _is_uuid(r)]  # others cannot name a run
        found = await self._runs.find_active(thread_id=thread_id, run_ids=run_ids, status=statuses)
        await self.cancel([r.run_id for r in found], action)

    def cancel_soon(self, run_id: str, action: CancelAction) -> None:
        """Cancel from a context that is itself being cancelled (a dropped SSE client)."""
        self._spawn(self.cancel([run_id], action), name=f"fawn-cancel-{run_id}")

    # -- thread-level operations -----------------------------------------------------------

    async def delete_run(self, thread_id: str, run_id: str) -> None:
        record = await self.get(thread_id, run_id)
        if record.status not in TERMINAL:
            raise Conflict(f"run {run_id} is {record.status}; cancel it before deleting it")
        await self._runs.delete(run_id)

    async def delete_thread(self, thread_id: str) -> None:
        await self._worker.threads.get(thread_id)
        active = await self._runs.active(thread_id)
        await self.cancel([r.run_id for r in active], "interrupt")
        for rec in active:
            await self.wait_finished(rec.run_id)
        await self._worker.threads.delete(thread_id)

    async def ensure_idle_for_update(self, thread_id: str) -> None:
        await self._worker.threads.get(thread_id)
        if await self._runs.active(thread_id):
            raise Conflict(
                f"thread {thread_id} has an active run; state updates must wait", retryable=True
            )

    # -- leases ------------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        interval = self._settings.lease_seconds / 3
        sweep_every = max(1, int(self._settings.sweep_seconds / interval))
        tick = 0
        while True:
            await asyncio.sleep(interval)
            tick += 1
            try:
                await self._renew()
                if not self._single_process and tick % sweep_every == 0:
                    await self._sweep()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("lease renewal failed")

    async def _sweep(self) -> None:
        now = utcnow()
        mine = set(self._handles)
        recovered = await self._runs.recover_orphans(
            reason=LEASE_REASON,
            is_orphan=lambda r: (
                r.run_id not in mine and (_lease_expired(r, now) or owner_gone(r.owner))
            ),
        )
        await self._settle_orphans(recovered, LEASE_REASON)

    async def _renew(self) -> None:
        ids = [h.run_id for h in self._handles.values()]
        for row in await self._runs.renew_leases(self.owner, ids, self._settings.lease_seconds):
            handle = self._handles.get(row.run_id)
            if handle is None:
                continue
            if row.cancel_action in ("interrupt", "rollback"):
                handle.request_cancel(row.cancel_action)  # type: ignore[arg-type]
            elif row.owner != self.owner or row.status in TERMINAL:
                handle.request_cancel("lease_lost")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
