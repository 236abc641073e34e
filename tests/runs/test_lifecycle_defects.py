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

from fawn.runs.errors import NotFound
from fawn.runs.ownership import LOST_TRACK_REASON
from fawn.store.run_queue import RunQueue
from fawn.streams.events import StreamEvent
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
)

TERMINAL = {"success", "error", "interrupted", "timeout"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def gates() -> Gates:
    return Gates()


async def _events(worker: Worker, run_id: str) -> list[tuple[str, Any]]:
    return [
        (item.event, item.data)
        async for item in worker.bridge.subscribe(run_id, heartbeat_seconds=60)
        if isinstance(item, StreamEvent)
    ]


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
        assert (await _events(worker, run_id))[-1] == (
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
        assert (await _events(worker, run_id))[-2:] == [
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
        assert (await _events(a, run_id))[-1] == (
            "end",
            {"run_id": run_id, "status": "interrupted"},
        )
