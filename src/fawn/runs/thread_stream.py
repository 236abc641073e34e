"""Following a thread: the output of each run executed on it, one after another.

``GET /threads/{id}/stream`` stays open until the client leaves. Modes (langgraph_sdk's
``ThreadStreamMode``): ``run_modes`` forwards every event of every run plus a ``run_done``
event when one ends; ``lifecycle`` only the start (``metadata``) and ``run_done`` of each run;
``state_update`` the ``values`` events. Event ids are ``<run_id>:<event id>`` so a client can
resume with ``Last-Event-ID`` across runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from fawn.runs.errors import InvalidInput
from fawn.store.runs import RunRecord, RunRepository
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import Heartbeat, StreamEvent, StreamGap

ThreadStreamMode = Literal["run_modes", "lifecycle", "state_update"]
POLL_SECONDS = 0.25


@dataclass(frozen=True, kw_only=True)
class ThreadEvent:
    id: str
    event: str
    data: Any


def parse_modes(raw: Sequence[str] | None) -> frozenset[str]:
    modes = frozenset(raw or ["run_modes"])
    unknown = sorted(modes - set(get_args(ThreadStreamMode)))
    if unknown:
        raise InvalidInput(
            f"unsupported thread stream_mode {', '.join(unknown)}; "
            f"supported: {', '.join(get_args(ThreadStreamMode))}",
            field="stream_mode",
        )
    return modes


def parse_cursor(raw: str | None) -> tuple[str, int] | None:
    if not raw:
        return None
    run_id, sep, event_id = raw.rpartition(":")
    if not sep or not run_id or not event_id.isdigit():
        raise InvalidInput(
            "Last-Event-ID for a thread stream looks like '<run_id>:<event id>'",
            field="Last-Event-ID",
        )
    return run_id, int(event_id)


def _wanted(event: str, modes: frozenset[str]) -> bool:
    if "run_modes" in modes:
        return True
    if "lifecycle" in modes and event in ("metadata", "run_done"):
        return True
    return "state_update" in modes and event == "values"


async def follow_thread(
    runs: RunRepository,
    bridge: StreamBridge,
    thread_id: str,
    *,
    modes: frozenset[str],
    cursor: tuple[str, int] | None,
    heartbeat_seconds: float,
) -> AsyncIterator[ThreadEvent | Heartbeat]:
    run, after = await _first_run(runs, thread_id, cursor)
    last_seq = run.seq if run is not None else await runs.last_seq(thread_id)
    idle = 0.0
    while True:
        if run is None:
            run = await runs.next_on_thread(thread_id, last_seq)
            if run is None:
                await asyncio.sleep(POLL_SECONDS)
                idle += POLL_SECONDS
                if idle >= heartbeat_seconds:
                    idle = 0.0
                    yield Heartbeat()
                continue
            after = None
        idle = 0.0
        async for item in _run_events(bridge, run, after, heartbeat_seconds):
            if isinstance(item, Heartbeat) or _wanted(item.event, modes):
                yield item
        last_seq, run = run.seq, None


async def _first_run(
    runs: RunRepository, thread_id: str, cursor: tuple[str, int] | None
) -> tuple[RunRecord | None, int | None]:
    if cursor is not None:
        record = await runs.get(cursor[0], thread_id)
        if record is None:
            raise InvalidInput(f"Last-Event-ID names run {cursor[0]}, not a run of this thread")
        return record, cursor[1]
    active = await runs.active(thread_id)
    return (active[0], None) if active else (None, None)


async def _run_events(
    bridge: StreamBridge, run: RunRecord, after: int | None, heartbeat_seconds: float
) -> AsyncIterator[ThreadEvent | Heartbeat]:
    if not await bridge.exists(run.run_id):
        # finished and no longer retained: say so, the client reloads durable state
        yield ThreadEvent(
            id=f"{run.run_id}:0",
            event="run_done",
            data={"run_id": run.run_id, "status": run.status, "retained": False},
        )
        return
    async for item in bridge.subscribe(
        run.run_id, after=after, heartbeat_seconds=heartbeat_seconds
    ):
        if isinstance(item, Heartbeat):
            yield item
        elif isinstance(item, StreamGap):
            yield ThreadEvent(
                id=f"{run.run_id}:{item.latest or 0}",
                event="gap",
                data={"run_id": run.run_id, **item.as_event_data()},
            )
        elif isinstance(item, StreamEvent):
            name = "run_done" if item.event == "end" else item.event
            yield ThreadEvent(id=f"{run.run_id}:{item.id}", event=name, data=item.data)
