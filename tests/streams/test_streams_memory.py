"""What only the in-memory bridge promises: shutdown ends subscriptions, publish stays cheap."""

from __future__ import annotations

import asyncio
import time

from fawn.config import StreamSettings
from fawn.streams import MemoryStreamBridge, StreamEvent, open_stream_bridge
from tests.streams.streams_helpers import collect

RUN = "run-1"


async def test_factory_builds_a_memory_bridge() -> None:
    bridge = await open_stream_bridge(StreamSettings())

    assert isinstance(bridge, MemoryStreamBridge)
    await bridge.aclose()


async def test_aclose_ends_live_subscriptions_and_forgets_streams() -> None:
    bridge = MemoryStreamBridge(StreamSettings(heartbeat_seconds=60, cleanup_delay_seconds=0.05))
    await bridge.open("finished")
    await bridge.close("finished")  # its cleanup timer is pending
    await bridge.open(RUN)
    await bridge.publish(RUN, "metadata", {"run_id": RUN})

    async with asyncio.TaskGroup() as group:
        live = group.create_task(collect(bridge, RUN, within=1))
        await asyncio.sleep(0.02)
        await bridge.aclose()
    await asyncio.sleep(0.1)  # the cancelled timer must not fire into a closed bridge

    assert live.result() == [StreamEvent(1, "metadata", {"run_id": RUN})]
    assert (await bridge.exists(RUN), await bridge.exists("finished")) == (False, False)


async def test_publish_stays_cheap_with_a_full_window_and_a_live_subscriber() -> None:
    # A publish that copied the window would cost ~10_000 steps here instead of one.
    bridge = MemoryStreamBridge(StreamSettings(retention_events=10_000, heartbeat_seconds=60))
    await bridge.open(RUN)
    total = 50_000

    async def publish() -> None:
        for n in range(total):
            await bridge.publish(RUN, "custom", n)
            if n % 100 == 0:
                await asyncio.sleep(0)
        await bridge.close(RUN)

    started = time.monotonic()
    async with asyncio.TaskGroup() as group:
        live = group.create_task(collect(bridge, RUN, within=10))
        group.create_task(publish())
    elapsed = time.monotonic() - started

    got = live.result()
    assert [(item.id, item.data) for item in got if isinstance(item, StreamEvent)] == [
        (n + 1, n) for n in range(total)
    ]
    assert len(got) == total
    assert elapsed < 3.0
    await bridge.aclose()
