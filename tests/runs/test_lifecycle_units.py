"""The run lifecycle in-process on a fake clock: the defects that are deterministic there.

Each test drives the real units (admission, dispatcher, executor and finalization steps,
cancellation, ownership) assembled as in production, with a graph whose steps the test
controls (see ``lifecycle_harness``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fawn.runs.errors import Conflict
from fawn.testing.clock import FakeClock
from tests.runs.lifecycle_harness import Gates, start_worker, stream_events


async def test_a_run_cancelled_before_it_starts_ends_and_frees_its_queue(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    """Defect 1: a queued run is cancelled, with another queued behind it."""
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        holder = await worker.admit(tid, "hold:h")
        first = await worker.admit(tid, "ok")
        second = await worker.admit(tid, "ok")
        await worker.service.cancel_one(tid, first, "interrupt", wait=True)
        assert await worker.status(tid, first) == "interrupted"
        gates.open("h")
        await worker.service.result(tid, second)

        statuses = [await worker.status(tid, r) for r in (holder, first, second)]
        assert statuses == ["success", "interrupted", "success"]
        assert (await worker.threads.get(tid)).status == "idle"
        assert (await stream_events(worker, first)) == [
            ("end", {"run_id": first, "status": "interrupted"})
        ]


async def test_a_stop_requested_before_the_task_body_runs_is_not_lost(
    tmp_path: Path, clock: FakeClock, gates: Gates
) -> None:
    """Defect 1, the race itself: a run is claimed (its task created) and cancelled before
    the task took its first step; the cancel takes effect when the body starts."""
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        # admit starts the run at once here; cancel before yielding to the event loop
        run_id = await worker.admit(tid, "hold:never")
        cancel = asyncio.ensure_future(
            worker.service.cancel_one(tid, run_id, "interrupt", wait=True)
        )
        await asyncio.wait_for(cancel, 30)
        assert await worker.status(tid, run_id) == "interrupted"
        follow_up = await worker.admit(tid, "ok")
        await worker.service.result(tid, follow_up)
        assert await worker.status(tid, follow_up) == "success"


async def test_reject_while_a_run_is_queued(tmp_path: Path, clock: FakeClock, gates: Gates) -> None:
    async with start_worker(tmp_path, clock=clock, gates=gates) as worker:
        tid = await worker.new_thread()
        held = await worker.admit(tid, "hold:a")
        with pytest.raises(Conflict):
            await worker.admit(tid, "ok", multitask_strategy="reject")
        gates.open("a")
        await worker.service.result(tid, held)
