"""Backends for the stream-bridge conformance suite.

``make_bridge`` is parametrized over every backend; each call builds a bridge with the given
setting overrides (through ``open_stream_bridge``, as the
gateway does). Redis bridges of one test share a unique key prefix (so two of them behave
like two gateway processes of one deployment), and that prefix's keys are deleted afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import pytest
from redis.asyncio import Redis

from fawn.config import StreamSettings
from fawn.streams import StreamBridge, open_stream_bridge
from tests.streams.streams_helpers import REDIS_URL, BridgeFactory


@pytest.fixture
def redis_prefix() -> str:
    return f"fawn-test-{uuid4().hex}"


async def drop_keys(client: Redis, prefix: str) -> None:
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    if keys:
        await client.delete(*keys)


@pytest.fixture
async def redis_client(redis_prefix: str) -> AsyncIterator[Redis]:
    """A client on the test Redis; the test's keys are deleted afterwards."""
    client = Redis.from_url(REDIS_URL)
    try:
        yield client
    finally:
        await drop_keys(client, redis_prefix)
        await client.aclose()


@pytest.fixture(
    params=[
        pytest.param("memory", id="memory"),
        pytest.param("redis", id="redis", marks=pytest.mark.redis),
    ]
)
async def make_bridge(
    request: pytest.FixtureRequest, redis_prefix: str
) -> AsyncIterator[BridgeFactory]:
    """``await make_bridge(**setting_overrides)`` builds a bridge the way production does."""
    backend: str = request.param
    bridges: list[StreamBridge] = []

    async def make(**overrides: Any) -> StreamBridge:
        settings = StreamSettings(
            backend="redis" if backend == "redis" else "memory",
            redis_url=REDIS_URL,
            redis_prefix=redis_prefix,
            **overrides,
        )
        bridges.append(await open_stream_bridge(settings))
        return bridges[-1]

    try:
        yield make
    finally:
        for bridge in bridges:
            await bridge.aclose()
        if backend == "redis":
            client = Redis.from_url(REDIS_URL)
            await drop_keys(client, redis_prefix)
            await client.aclose()
