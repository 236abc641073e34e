"""Issue 8's defects, one or more tests each, in-process on a fake clock (see
``lifecycle_harness``): the real units assembled as in production, faults injected through
seams (a database that refuses statements, a stream backend that fails, a shared notifier
standing for Redis pub/sub between two workers on one PostgreSQL database).

Time only moves when a test advances the fake clock, so a test that passes without advancing
it proves that what it checks happened on a signal, not at a renewal, a sweep or a poll.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fawn.gateway.errors import STATUS_BY_CODE
from fawn.runs.errors import Conflict, Draining, NotFound
from fawn.runs.following import ThreadItem
from fawn.runs.ownership import LOST_TRACK_REASON, OUTAGE_REASON
from fawn.store.run_queue import RunQueue
from fawn.store.threads import ThreadFilter
from fawn.store.workers import WorkerRepository
from fawn.streams.events import StreamUnavailable
from fawn.streams.notify import MemoryNotifier
from fawn.testing.clock import FakeClock
from tests.runs.lifecycle_harness import (
    Gates,
    Worker,
    database_down,
    eventually,
    run_spec,
    settle,
    start_worker,
    stream_events,
)

TERMINAL = {"success", "error", "interrupted", "timeout"}


async def _status(worker: Worker, thread_id: str, run_id: str) -> str:
    try:
        return await worker.status(thread_id, run_id)
    except NotFound:
        return "deleted"


async def _steps(worker: Worker, thread_id: str) -> list[str]:
    state = await worker.threads.get_state(thread_id)
    return list((state.values or {}).get("steps") or [])


@contextlib.asynccontextmanager
async def _pair(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates, **runs: Any
) -> AsyncIterator[tuple[Worker, Worker]]:
    """Two workers on one PostgreSQL database sharing a notifier (as Redis) and the clock."""
    notifier = MemoryNotifier()
    async with (
        start_worker(
            tmp_path / "a", clock=clock, gates=gates, notifier=notifier, db_url=pg_url, **runs
        ) as a,
        start_worker(
            tmp_path / "b", clock=clock, gates=gates, notifier=notifier, db_url=pg_url, **runs
        ) as b,
    ):
        yield a, b


# -- 1. a run cancelled before its task starts ------------------------------------------------


async def test_1_runs_cancelled_as_they_are_admitted_all_end_and_the_queue_moves(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    """Every other run of an enqueue burst is cancelled at once, whatever point its task has
    reached (claimed and started here, or still queued): all end, the rest run in order."""
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        ids: list[str] = []
        for i in range(16):
            run_id = await worker.admit(tid, f"r{i}", multitask_strategy="enqueue")
            ids.append(run_id)
            if i % 2 == 0:
                with contextlib.suppress(NotFound):  # it may have finished already
                    await worker.service.cancel_one(tid, run_id, "interrupt", wait=False)
        await asyncio.wait_for(worker.service.result(tid, ids[-1]), 30)
        statuses = [await worker.status(tid, r) for r in ids]
        assert all(s in TERMINAL for s in statuses), statuses
        assert [s for i, s in enumerate(statuses) if i % 2] == ["success"] * 8
        assert (await worker.threads.get(tid)).status == "idle"
        # the runs ran one after another, each at most once; every uncancelled one wrote its
        # step (a cancelled one may have written its step before the cancel landed: an
        # interrupt keeps what was checkpointed)
        steps = await _steps(worker, tid)
        assert steps == sorted(set(steps), key=lambda c: int(c[1:]))
        assert {f"r{i}" for i in range(1, 16, 2)} <= set(steps)


# -- 2. finalization: durable completion first, whatever the stream does -----------------------


async def test_2_a_broken_stream_cannot_keep_a_run_from_its_terminal_status(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()

        async def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the stream backend broke")

        worker.bridge.publish = broken  # type: ignore[method-assign]
        worker.bridge.close = broken  # type: ignore[method-assign]
        run_id = await worker.admit(tid, "ok")
        result = await asyncio.wait_for(worker.service.result(tid, run_id), 30)
        assert result.error is None
        assert await worker.status(tid, run_id) == "success"
        assert (await worker.threads.get(tid)).status == "idle"


async def test_2_completion_retries_through_a_database_outage(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        run_id = await worker.admit(tid, "hold:h")
        await gates.reached("h")
        with database_down(worker):
            gates.open("h")
            await settle(clock, 3.0)  # finalization retries, well within the tolerance
        await eventually(lambda: _is(worker, tid, run_id, "success"), clock=clock, step=0.5)
        assert await _steps(worker, tid) == ["hold:h"]
        assert (await stream_events(worker, run_id))[-1] == (
            "end",
            {"run_id": run_id, "status": "success"},
        )


async def _is(worker: Worker, tid: str, run_id: str, status: str) -> bool:
    return await _status(worker, tid, run_id) == status


async def test_2_a_finalization_that_fails_is_settled_by_the_process_itself_on_sqlite(
    tmp_path: Path, clock: FakeClock, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A completion that fails for good (not an outage) leaves the run ``running`` with no
    task; the worker's own sweep settles it, ends its stream and frees the thread."""
    failures: list[str] = []

    async def refuse(self: RunQueue, done: Any, now: Any) -> Any:
        failures.append(done.run_id)
        raise RuntimeError("the completion failed")

    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        monkeypatch.setattr(RunQueue, "complete", refuse)
        run_id = await worker.admit(tid, "ok")
        await eventually(lambda: failures)
        monkeypatch.undo()
        await eventually(lambda: _is(worker, tid, run_id, "error"), clock=clock, step=1.0)
        record = await worker.service.get(tid, run_id)
        assert (record.stop_reason, record.error) == ("orphaned", LOST_TRACK_REASON)
        assert (await stream_events(worker, run_id))[-2:] == [
            ("error", {"error": "RunOrphaned", "message": LOST_TRACK_REASON}),
            ("end", {"run_id": run_id, "status": "error"}),
        ]
        follow_up = await worker.admit(tid, "ok")
        await asyncio.wait_for(worker.service.result(tid, follow_up), 30)
        assert await worker.status(tid, follow_up) == "success"


# -- 3. interrupt / rollback bursts: exactly the last admitted run proceeds ---------------------


async def _burst(
    thread_id: str, admitters: list[Worker], strategy: str, size: int
) -> list[tuple[str, str]]:
    """``size`` runs admitted at once (round robin over ``admitters``): (run id, command)
    in admission order (``seq``). Each holds at its gate (``<thread>-b<i>``) until the
    test opens it, so none can end on its own before the burst is over."""
    commands = [f"hold:{thread_id}-b{i}" for i in range(size)]
    records = await asyncio.gather(
        *(
            admitters[i % len(admitters)].service.admit(
                thread_id, run_spec(c, multitask_strategy=strategy)
            )
            for i, c in enumerate(commands)
        )
    )
    command = {r.run_id: c for r, c in zip(records, commands, strict=True)}
    return [(r.run_id, command[r.run_id]) for r in sorted(records, key=lambda r: r.seq)]


async def _check_burst(
    gates: Gates,
    worker: Worker,
    thread_id: str,
    holder: str,
    ordered: list[tuple[str, str]],
    strategy: str,
) -> None:
    last, command = ordered[-1]
    for _, gate in ordered:
        gates.open(gate.removeprefix("hold:"))
    await asyncio.wait_for(worker.service.result(thread_id, last), 30)
    statuses = [await _status(worker, thread_id, r) for r in [holder, *(r for r, _ in ordered)]]
    stopped = "deleted" if strategy == "rollback" else "interrupted"
    assert statuses == [stopped] * len(ordered) + ["success"]
    # only the last run wrote its step (the holder was stopped inside its node)
    assert await _steps(worker, thread_id) == [command]
    assert (await worker.threads.get(thread_id)).status == "idle"


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_3_a_burst_on_one_worker_leaves_only_the_last_run(
    tmp_path: Path, clock: FakeClock, gates: Gates, strategy: str
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        for _ in range(3):
            tid = await worker.new_thread()
            holder = await worker.admit(tid, "hold:never")
            await gates.reached("never")
            ordered = await _burst(tid, [worker], strategy, 6)
            await _check_burst(gates, worker, tid, holder, ordered, strategy)


@pytest.mark.postgres
@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
async def test_3_a_burst_across_two_workers_leaves_only_the_last_run(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates, strategy: str
) -> None:
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        for _ in range(3):
            tid = await a.new_thread()
            holder = await a.admit(tid, "hold:never")
            await gates.reached("never")
            ordered = await _burst(tid, [b, a], strategy, 6)
            await _check_burst(gates, b, tid, holder, ordered, strategy)


# -- 4. a cancel sent to another worker is a signal ---------------------------------------------


@pytest.mark.postgres
async def test_4_a_cancel_through_another_worker_applies_without_a_renewal(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates
) -> None:
    """The clock never moves: no renewal, sweep or poll happens; only the signal can stop it."""
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        run_id = await a.admit(tid, "hold:never")
        await gates.reached("never")
        assert (await b.service.get(tid, run_id)).owner == a.lifecycle.worker_id
        await asyncio.wait_for(b.service.cancel_one(tid, run_id, "interrupt", wait=True), 10)
        record = await b.service.get(tid, run_id)
        assert (record.status, record.stop_reason) == ("interrupted", "cancelled")
        assert (await stream_events(a, run_id))[-1] == (
            "end",
            {"run_id": run_id, "status": "interrupted"},
        )


@pytest.mark.postgres
async def test_4_a_cancel_signalled_between_a_claim_and_its_registration_still_applies(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker a has claimed the run in the database but not registered it yet when worker
    b's ``interrupt`` admission marks it and signals: the signal finds no run on a. It must
    still stop the run (the clock never moves, so no renewal can rescue it)."""
    paused, release = asyncio.Event(), asyncio.Event()
    claim = RunQueue.claim
    held: list[str] = []

    async def slow_claim(self: RunQueue, run_id: str, thread_id: str, *args: Any) -> Any:
        claimed = await claim(self, run_id, thread_id, *args)
        if claimed is not None and not held:
            held.append(run_id)
            paused.set()
            await release.wait()
        return claimed

    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        monkeypatch.setattr(RunQueue, "claim", slow_claim)
        admitting = asyncio.create_task(a.admit(tid, "hold:never"))
        await asyncio.wait_for(paused.wait(), 10)
        follower = await b.admit(tid, "ok", multitask_strategy="interrupt")
        release.set()
        holder = await asyncio.wait_for(admitting, 10)
        assert held == [holder]
        await asyncio.wait_for(b.service.result(tid, follower), 10)
        assert [await _status(b, tid, r) for r in (holder, follower)] == [
            "interrupted",
            "success",
        ]
        assert await _steps(b, tid) == ["ok"]


@pytest.mark.postgres
async def test_a_run_admitted_where_a_slot_is_free_runs_there(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates
) -> None:
    """Peers are told of a run only once the admitting worker could not start it: told
    before, an idle peer could claim it first, away from the client following it (found by
    the SIGTERM fault test: a run admitted on the drained worker was running on the other)."""
    async with _pair(tmp_path, pg_url, clock, gates, max_concurrent=20) as (a, b):
        tids = [await a.new_thread() for _ in range(12)]
        runs = await asyncio.gather(*(a.admit(t, f"hold:own-{i}") for i, t in enumerate(tids)))
        admitted = list(zip(tids, runs, strict=True))
        owners = {(await a.service.get(t, r)).owner for t, r in admitted}
        assert owners == {a.lifecycle.worker_id}
        for i in range(12):
            gates.open(f"own-{i}")
        for tid, run_id in admitted:
            await asyncio.wait_for(a.service.result(tid, run_id), 30)


# -- 5. the stream backend goes away ------------------------------------------------------------


class _Blip:
    """Makes a worker's stream backend unreachable while ``down``."""

    def __init__(self, worker: Worker) -> None:
        self.down = False
        bridge = worker.bridge
        for name in ("open", "publish", "close"):
            setattr(bridge, name, self._guard(getattr(bridge, name)))

    def _guard(self, method: Any) -> Any:
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise StreamUnavailable("the stream backend is unavailable (test)")
            return await method(*args, **kwargs)

        return guarded


async def test_5_admission_without_a_stream_backend_is_503_and_leaves_nothing(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        threads_before = await worker.threads.count(ThreadFilter())
        blip = _Blip(worker)
        blip.down = True
        for thread_id in (tid, None):  # a thread's run and a stateless one
            with pytest.raises(StreamUnavailable) as refused:
                await worker.admit(thread_id, "ok")
            assert STATUS_BY_CODE[refused.value.code] == 503
        blip.down = False
        assert await worker.service.list_page(tid, limit=10, offset=0, status=None) == ([], 0)
        assert (await worker.threads.get(tid)).status == "idle"
        assert await worker.threads.count(ThreadFilter()) == threads_before
        # and the thread is free at once
        run_id = await worker.admit(tid, "ok", multitask_strategy="reject")
        await asyncio.wait_for(worker.service.result(tid, run_id), 30)


async def test_5_a_stream_outage_during_a_run_fails_nothing_and_loses_no_event(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        blip = _Blip(worker)
        run_id = await worker.admit(tid, "hold:s")
        await gates.reached("s")
        blip.down = True
        gates.open("s")
        await eventually(lambda: _is(worker, tid, run_id, "success"))
        await settle(clock, 2.0)  # the publisher keeps retrying
        blip.down = False
        await settle(clock, 2.0)
        events = await stream_events(worker, run_id)
        assert [e for e, _ in events] == ["metadata", "values", "values", "end"]
        assert events[-1] == ("end", {"run_id": run_id, "status": "success"})


# -- 6. queued runs belong to the thread's queue, not to a worker -------------------------------


@pytest.mark.postgres
async def test_6_a_draining_worker_leaves_its_queued_runs_to_a_peer(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates
) -> None:
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        holder = await a.admit(tid, "hold:d6")
        await gates.reached("d6")
        queued = [await a.admit(tid, f"q{i}", multitask_strategy="enqueue") for i in range(3)]
        drain = asyncio.create_task(a.lifecycle.drain())
        await settle(clock)
        with pytest.raises(Draining):
            await a.admit(tid, "late", multitask_strategy="enqueue")
        gates.open("d6")
        await asyncio.wait_for(drain, 30)
        for run_id in queued:
            await asyncio.wait_for(b.service.result(tid, run_id), 30)
        records = [await b.service.get(tid, r) for r in [holder, *queued]]
        assert [(r.status, r.owner) for r in records] == [("success", a.lifecycle.worker_id)] + [
            ("success", b.lifecycle.worker_id)
        ] * 3


@pytest.mark.postgres
async def test_6_a_dead_workers_queued_runs_run_on_a_peer(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates
) -> None:
    """A is cut off (its database connections fail, as in a crash seen from B): its running
    run is settled by B once the lease expired, its queued runs run on B."""
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        holder = await a.admit(tid, "hold:k6")
        await gates.reached("k6")
        queued = [await a.admit(tid, f"q{i}", multitask_strategy="enqueue") for i in range(2)]
        with database_down(a):
            for _ in range(30):  # 30 s: past the tolerance (10 s) and the lease (20 s)
                await settle(clock, 1.0, rounds=3)
            for run_id in queued:
                await asyncio.wait_for(b.service.result(tid, run_id), 30)
        record = await b.service.get(tid, holder)
        assert (record.status, record.stop_reason) == ("error", "orphaned")
        records = [await b.service.get(tid, r) for r in queued]
        assert [(r.status, r.owner) for r in records] == [("success", b.lifecycle.worker_id)] * 2
        assert await _steps(b, tid) == ["q0", "q1"]


# -- 7. a database outage kills nothing it need not kill ----------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("everyone", [True, False], ids=["shared", "partition"])
async def test_7_an_outage_shorter_than_the_tolerance_kills_nothing(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates, everyone: bool
) -> None:
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        gate = f"o7-{everyone}"
        run_id = await a.admit(tid, f"hold:{gate}")
        await gates.reached(gate)
        with database_down(*((a, b) if everyone else (a,))):
            for _ in range(9):  # 9 s < runs.outage_tolerance_seconds (10 s)
                await settle(clock, 1.0, rounds=3)
        await settle(clock, 3.0)  # renewals and sweeps resume
        gates.open(gate)
        await asyncio.wait_for(b.service.result(tid, run_id), 30)
        assert (await b.service.get(tid, run_id)).status == "success"


@pytest.mark.postgres
async def test_7_a_shared_outage_longer_than_the_lease_ends_runs_by_their_owner_only(
    tmp_path: Path, pg_url: str, clock: FakeClock, gates: Gates
) -> None:
    """Fencing: nobody could renew, so nobody is declared dead; the owner itself stopped its
    run once the outage passed its tolerance, and settles it when the database is back."""
    async with _pair(tmp_path, pg_url, clock, gates) as (a, b):
        tid = await a.new_thread()
        run_id = await a.admit(tid, "hold:l7")
        await gates.reached("l7")
        with database_down(a, b):
            for _ in range(30):  # 30 s > runs.lease_seconds (20 s)
                await settle(clock, 1.0, rounds=3)
        await eventually(lambda: _is(b, tid, run_id, "error"), clock=clock, step=1.0)
        record = await b.service.get(tid, run_id)
        assert (record.error, record.stop_reason) == (OUTAGE_REASON, "orphaned")
        states = {w.worker_id: w.state for w in await WorkerRepository(b.db).all()}
        assert states[a.lifecycle.worker_id] == "active"
        follow_up = await b.admit(tid, "ok")
        await asyncio.wait_for(b.service.result(tid, follow_up), 30)


# -- 8. graceful drain --------------------------------------------------------------------------


async def test_8_drain_lets_a_running_run_finish_and_ends_its_stream(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        run_id = await worker.admit(tid, "hold:g8")
        await gates.reached("g8")
        drain = asyncio.create_task(worker.lifecycle.drain())
        await settle(clock, 2.0)  # within runs.drain_seconds (5 s)
        assert not drain.done()
        gates.open("g8")
        await asyncio.wait_for(drain, 30)
        assert await worker.status(tid, run_id) == "success"
        assert (await stream_events(worker, run_id))[-1] == (
            "end",
            {"run_id": run_id, "status": "success"},
        )


async def test_8_drain_stops_a_run_that_outlasts_it_with_a_terminal_event(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        run_id = await worker.admit(tid, "hold:never8")
        await gates.reached("never8")
        drain = asyncio.create_task(worker.lifecycle.drain())
        await settle(clock, 6.0)  # past runs.drain_seconds (5 s)
        await asyncio.wait_for(drain, 30)
        record = await worker.service.get(tid, run_id)
        assert (record.status, record.stop_reason) == ("error", "shutdown")
        assert (await stream_events(worker, run_id))[-2:] == [
            (
                "error",
                {"error": "ServerShutdown", "message": "the server shut down during the run"},
            ),
            ("end", {"run_id": run_id, "status": "error"}),
        ]


# -- 10. state updates, thread streams ----------------------------------------------------------


async def test_10_a_state_update_racing_an_admission_never_idles_a_busy_thread(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        for i in range(8):
            tid = await worker.new_thread()
            update = worker.service.update_state(
                tid,
                {"messages": [{"role": "user", "content": f"u{i}"}]},
                as_node="work",
                checkpoint=None,
            )
            admitted, updated = await asyncio.gather(
                worker.admit(tid, f"hold:u{i}"), update, return_exceptions=True
            )
            assert isinstance(admitted, str), admitted
            assert updated is None or isinstance(updated, (dict, Conflict)), updated
            assert (await worker.threads.get(tid)).status == "busy"
            gates.open(f"u{i}")
            await asyncio.wait_for(worker.service.result(tid, admitted), 30)
            assert (await worker.threads.get(tid)).status == "idle"


async def test_10_a_thread_stream_follows_the_run_after_a_rolled_back_one_by_notification(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    """The clock never moves: the follower is woken by notifications alone. The run after a
    deleted (rolled back) run is found although it is admitted after the deletion."""
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        first = await worker.admit(tid, "ok")
        await worker.service.result(tid, first)
        seen: list[tuple[str, str]] = []

        async def follow() -> None:
            async for item in worker.service.follow_thread(tid, cursor=None, heartbeat_seconds=60):
                if isinstance(item, ThreadItem):
                    name = getattr(item.item, "event", type(item.item).__name__)
                    seen.append((item.run_id, name))

        follower = asyncio.create_task(follow())
        try:
            rolled = await worker.admit(tid, "hold:t10")
            await gates.reached("t10")
            await eventually(lambda: (rolled, "metadata") in seen)
            await worker.service.cancel_one(tid, rolled, "rollback", wait=True)
            after = await worker.admit(tid, "ok")
            await worker.service.result(tid, after)
            await eventually(lambda: (after, "end") in seen)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        assert [name for run_id, name in seen if run_id == after] == [
            "metadata",
            "values",
            "values",
            "end",
        ]


async def test_10_a_deleted_threads_sandbox_is_released(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        provider = worker.sandbox
        sandbox = await provider.acquire(tid)
        assert provider.get(sandbox.id) is sandbox
        await worker.service.delete_thread(tid)
        assert provider.get(sandbox.id) is None
