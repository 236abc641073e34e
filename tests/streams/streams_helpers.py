"""Helpers shared by the stream tests: bounded collection and deterministic closing."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fawn.streams import StreamBridge, StreamEvent, StreamItem

TIMEOUT = 5.0
REDIS_URL = os.environ.get("FAWN_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

BridgeFactory = Callable[..., Awaitable[StreamBridge]]
"""``make_bridge`` in conftest: ``await make_bridge(**setting_overrides)``."""


@asynccontextmanager
async def subscription(
    bridge: StreamBridge, run_id: str, **kwargs: Any
) -> AsyncIterator[AsyncIterator[StreamItem]]:
    """A subscription that is closed on exit even when the test stops reading early."""
    items = bridge.subscribe(run_id, **kwargs)
    try:
        yield items
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()


async def collect(
    bridge: StreamBridge, run_id: str, *, within: float = TIMEOUT, **kwargs: Any
) -> list[StreamItem]:
    """Everything a subscription yields until it stops (a hang fails after ``within`` seconds)."""
    async with asyncio.timeout(within), subscription(bridge, run_id, **kwargs) as items:
        return [item async for item in items]


async def take(
    bridge: StreamBridge, run_id: str, count: int, *, within: float = TIMEOUT, **kwargs: Any
) -> list[StreamItem]:
    """The first ``count`` items of a subscription, which is then dropped."""
    got: list[StreamItem] = []
    async with asyncio.timeout(within), subscription(bridge, run_id, **kwargs) as items:
        async for item in items:
            got.append(item)
            if len(got) == count:
                break
    return got


async def publish_all(bridge: StreamBridge, run_id: str, events: list[StreamEvent]) -> None:
    for event in events:
        assert await bridge.publish(run_id, event.event, event.data) == event.id


def sample_events(count: int) -> list[StreamEvent]:
    """A run-shaped sequence: metadata first, then a mix of modes and payload shapes."""
    names = ["values", "messages", "updates|sub:1", "custom"]
    events = [StreamEvent(1, "metadata", {"run_id": "run-1", "attempt": 1})]
    for n in range(2, count + 1):
        name = names[n % len(names)]
        data: Any = {"n": n, "text": f"é{n}✓", "nested": {"list": [n, None, True, 1.5]}}
        if name == "messages":
            data = [{"content": f"chunk {n}", "type": "AIMessageChunk"}, {"langgraph_node": "m"}]
        events.append(StreamEvent(n, name, data))
    return events[:count]
