"""The StreamBridge contract. Every backend runs every test here (see ``make_bridge``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from fawn.streams import (
    Heartbeat,
    InvalidCursor,
    StreamBridge,
    StreamClosed,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
)
from tests.streams.streams_helpers import (
    TIMEOUT,
    BridgeFactory,
    collect,
    publish_all,
    sample_events,
    subscription,
    take,
)

RUN = "run-1"


async def gone_within(bridge: StreamBridge, run_id: str, *, seconds: float) -> bool:
    """Poll ``exists`` (cleanup is the backend's own timer; there is nothing to await)."""
    for _ in range(round(seconds / 0.02)):
        if not await bridge.exists(run_id):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_ids_start_at_one_and_increase_by_one(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    assert await bridge.latest_id(RUN) is None

    ids = [await bridge.publish(RUN, "values", {"n": n}) for n in range(5)]

    assert ids == [1, 2, 3, 4, 5]
    assert await bridge.latest_id(RUN) == 5


async def test_concurrent_publishers_get_unique_dense_ids(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)

    ids = await asyncio.gather(*(bridge.publish(RUN, "custom", {"n": n}) for n in range(200)))
    await bridge.close(RUN)

    assert sorted(ids) == list(range(1, 201))
    expected = sorted(
        (StreamEvent(id_, "custom", {"n": n}) for n, id_ in enumerate(ids)), key=lambda e: e.id
    )
    assert await collect(bridge, RUN) == expected


@pytest.mark.parametrize("after", [None, 0])
async def test_subscribe_from_start_replays_everything_and_stops_at_close(
    make_bridge: BridgeFactory, after: int | None
) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    events = sample_events(9)
    await publish_all(bridge, RUN, events)
    await bridge.close(RUN)

    assert await collect(bridge, RUN, after=after) == events


async def test_resume_after_cursor_yields_exactly_the_later_events(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    events = sample_events(10)
    await publish_all(bridge, RUN, events)
    await bridge.close(RUN)

    replays = {k: await collect(bridge, RUN, after=k) for k in range(11)}

    assert replays == {k: events[k:] for k in range(11)}


async def test_resume_while_live_yields_later_events_without_loss_or_duplicates(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    events = sample_events(12)
    await publish_all(bridge, RUN, events[:4])

    async with asyncio.TaskGroup() as group:
        resumed = group.create_task(collect(bridge, RUN, after=2))
        for event in events[4:]:
            await asyncio.sleep(0.002)
            assert await bridge.publish(RUN, event.event, event.data) == event.id
        await bridge.close(RUN)

    assert resumed.result() == events[2:]


async def test_dropped_subscription_plus_resume_is_the_full_sequence(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    events = sample_events(15)
    await publish_all(bridge, RUN, events[:3])

    async def publish_rest() -> None:
        for event in events[3:]:
            await asyncio.sleep(0.002)
            await bridge.publish(RUN, event.event, event.data)
        await bridge.close(RUN)

    before_drop: list[StreamItem] = []
    async with asyncio.timeout(TIMEOUT), asyncio.TaskGroup() as group:
        group.create_task(publish_rest())
        async with subscription(bridge, RUN) as items:
            async for item in items:
                before_drop.append(item)
                if len(before_drop) == 7:
                    break
    last = before_drop[-1]
    assert isinstance(last, StreamEvent)

    after_resume = await collect(bridge, RUN, after=last.id)

    assert before_drop + after_resume == events


async def test_cursor_older_than_retention_yields_one_gap_then_stops(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge(retention_events=5, heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(12)
    await publish_all(bridge, RUN, events)
    gaps = {after: [StreamGap(after or 0, earliest=8, latest=12)] for after in (None, 1, 6)}

    while_open = {after: await collect(bridge, RUN, after=after) for after in gaps}
    live_tail = await take(bridge, RUN, 5, after=7)
    await bridge.close(RUN)
    after_close = {after: await collect(bridge, RUN, after=after) for after in (*gaps, 7, 12)}

    assert while_open == gaps
    assert live_tail == events[7:]
    assert after_close == gaps | {7: events[7:], 12: []}
    assert await bridge.latest_id(RUN) == 12


async def test_live_subscriber_that_falls_behind_the_window_gets_a_gap(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge(retention_events=5, heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(21)
    await publish_all(bridge, RUN, events[:1])

    async with asyncio.timeout(TIMEOUT), subscription(bridge, RUN) as items:
        iterator = aiter(items)
        got: list[StreamItem] = [await anext(iterator)]
        await publish_all(bridge, RUN, events[1:])  # the subscriber is not reading
        got += [item async for item in iterator]

    assert got == [events[0], StreamGap(requested=1, earliest=17, latest=21)]


@pytest.mark.parametrize("source", ["settings", "argument"])
async def test_heartbeats_while_idle(make_bridge: BridgeFactory, source: str) -> None:
    if source == "settings":
        bridge = await make_bridge(heartbeat_seconds=0.05)
        kwargs = {}
    else:
        bridge = await make_bridge(heartbeat_seconds=60)
        kwargs = {"heartbeat_seconds": 0.05}
    await bridge.open(RUN)

    got: list[StreamItem] = []
    started = time.monotonic()
    async with asyncio.timeout(TIMEOUT), subscription(bridge, RUN, **kwargs) as items:
        async for item in items:
            got.append(item)
            if len(got) == 3:
                elapsed = time.monotonic() - started
                await bridge.publish(RUN, "values", {"a": 1})
            if isinstance(item, StreamEvent):
                await bridge.close(RUN)

    assert got == [Heartbeat(), Heartbeat(), Heartbeat(), StreamEvent(1, "values", {"a": 1})]
    assert 0.12 <= elapsed < 2.0  # three idle intervals, not a busy loop


async def test_late_joiner_of_a_closed_stream_gets_the_replay_and_stops(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge(heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(3)
    await publish_all(bridge, RUN, events)
    await bridge.close(RUN)

    # With a 60 s heartbeat a 1 s bound proves none of these waits for anything.
    got = {after: await collect(bridge, RUN, after=after, within=1) for after in (None, 3, 50)}

    assert got == {None: events, 3: [], 50: []}


async def test_closed_empty_stream_ends_at_once(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge(heartbeat_seconds=60)
    await bridge.open(RUN)
    await bridge.close(RUN)

    assert await collect(bridge, RUN, within=1) == []
    assert await bridge.latest_id(RUN) is None


async def test_close_wakes_waiting_subscribers_at_once(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge(heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(2)

    async with asyncio.TaskGroup() as group:
        waiting = group.create_task(collect(bridge, RUN, within=1))
        await asyncio.sleep(0.05)  # let it block
        await publish_all(bridge, RUN, events)
        await bridge.close(RUN)

    assert waiting.result() == events


async def test_concurrent_subscribers_each_see_the_full_sequence(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge(heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(50)

    async with asyncio.TaskGroup() as group:
        subscribers = [group.create_task(collect(bridge, RUN)) for _ in range(5)]
        await asyncio.sleep(0.02)
        for event in events:
            await bridge.publish(RUN, event.event, event.data)
            if event.id % 10 == 0:
                await asyncio.sleep(0.001)
        await bridge.close(RUN)

    assert [task.result() for task in subscribers] == [events] * 5


async def test_cancelling_one_subscriber_leaves_the_others_running(
    make_bridge: BridgeFactory,
) -> None:
    bridge = await make_bridge(heartbeat_seconds=60)
    await bridge.open(RUN)
    events = sample_events(3)

    async with asyncio.TaskGroup() as group:
        doomed = group.create_task(collect(bridge, RUN))
        survivor = group.create_task(collect(bridge, RUN))
        await asyncio.sleep(0.05)  # both are waiting for the first event
        doomed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await doomed
        await publish_all(bridge, RUN, events)
        await bridge.close(RUN)

    assert survivor.result() == events
    assert await collect(bridge, RUN) == events


async def test_cleanup_after_delay_forgets_the_stream(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge(cleanup_delay_seconds=0.1)
    await bridge.open(RUN)
    events = sample_events(2)
    await publish_all(bridge, RUN, events)
    await bridge.close(RUN)

    assert await bridge.exists(RUN)
    assert await collect(bridge, RUN) == events
    assert await gone_within(bridge, RUN, seconds=3)

    with pytest.raises(StreamNotFound):
        await collect(bridge, RUN)
    with pytest.raises(StreamNotFound):
        await bridge.latest_id(RUN)


async def test_unknown_run_is_not_found_everywhere(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()

    assert not await bridge.exists("never-opened")
    items = bridge.subscribe("never-opened")  # lazy: the error comes on first iteration
    with pytest.raises(StreamNotFound) as raised:
        await anext(aiter(items))
    assert (raised.value.code, raised.value.retryable, raised.value.run_id) == (
        "stream_not_found",
        False,
        "never-opened",
    )
    with pytest.raises(StreamNotFound):
        await bridge.publish("never-opened", "values", {})
    with pytest.raises(StreamNotFound):
        await bridge.close("never-opened")
    with pytest.raises(StreamNotFound):
        await bridge.latest_id("never-opened")


async def test_open_is_idempotent_and_close_is_final(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)
    await bridge.open(RUN)
    events = sample_events(2)
    await publish_all(bridge, RUN, events[:1])
    await bridge.open(RUN)  # does not reset the ids
    await publish_all(bridge, RUN, events[1:])

    await bridge.close(RUN)
    await bridge.close(RUN)
    await bridge.open(RUN)  # does not reopen a closed stream

    with pytest.raises(StreamClosed) as raised:
        await bridge.publish(RUN, "values", {})
    assert raised.value.code == "stream_closed"
    assert await bridge.exists(RUN)
    assert await bridge.latest_id(RUN) == 2
    assert await collect(bridge, RUN) == events


async def test_runs_are_independent(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()
    await bridge.open("run-a")
    await bridge.open("run-b")
    await bridge.publish("run-a", "values", {"run": "a"})
    await bridge.publish("run-b", "values", {"run": "b1"})
    await bridge.publish("run-b", "values", {"run": "b2"})
    await bridge.close("run-a")

    assert await collect(bridge, "run-a") == [StreamEvent(1, "values", {"run": "a"})]
    assert await bridge.latest_id("run-b") == 2
    assert await bridge.publish("run-b", "end", None) == 3


@pytest.mark.parametrize("after", [-1, 2**63])
async def test_out_of_range_cursor_is_refused(make_bridge: BridgeFactory, after: int) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)

    with pytest.raises(InvalidCursor):
        await collect(bridge, RUN, after=after)


async def test_publishes_racing_close_are_delivered_or_refused(make_bridge: BridgeFactory) -> None:
    bridge = await make_bridge()
    await bridge.open(RUN)

    async def publish(n: int) -> StreamEvent | None:
        try:
            return StreamEvent(await bridge.publish(RUN, "custom", {"n": n}), "custom", {"n": n})
        except StreamClosed:
            return None

    before = [publish(n) for n in range(30)]
    after = [publish(n) for n in range(30, 60)]
    results = await asyncio.gather(*before, bridge.close(RUN), *after)
    accepted = sorted((r for r in results if isinstance(r, StreamEvent)), key=lambda e: e.id)

    assert [event.id for event in accepted] == list(range(1, len(accepted) + 1))
    assert await collect(bridge, RUN) == accepted
