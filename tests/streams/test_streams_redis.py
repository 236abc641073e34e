"""What only the Redis bridge promises: its key layout, several processes on one run, any client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio import Redis

from fawn.config import StreamSettings
from fawn.streams import StreamEvent, StreamGap, StreamUnavailable, open_stream_bridge
from fawn.streams.redis import RedisStreamBridge
from tests.streams.streams_helpers import REDIS_URL, collect, publish_all, sample_events

pytestmark = pytest.mark.redis

RUN = "run-1"


def settings_for(prefix: str, **overrides: object) -> StreamSettings:
    return StreamSettings.model_validate(
        {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix, **overrides}
    )


async def ttls_ms(client: Redis, prefix: str) -> dict[str, int]:
    """Every key under ``prefix`` with its time to live (-1: none)."""
    keys: list[Any] = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    return {key.decode(): await client.pttl(key) for key in keys}


async def test_key_layout_and_expiry_after_close(redis_client: Redis, redis_prefix: str) -> None:
    bridge = RedisStreamBridge(
        settings_for(redis_prefix, retention_events=3, cleanup_delay_seconds=60), redis_client
    )
    await bridge.open(RUN)
    await publish_all(bridge, RUN, sample_events(4))
    keys = {f"{redis_prefix}:{kind}:{RUN}" for kind in ("seq", "stream", "closed")}

    before_close = await ttls_ms(redis_client, redis_prefix)
    await bridge.close(RUN)
    after_close = await ttls_ms(redis_client, redis_prefix)
    entries: Any = await redis_client.xrange(f"{redis_prefix}:stream:{RUN}")
    entry_ids = [entry_id.decode() for entry_id, _ in entries]

    no_expiry = -1
    assert before_close == dict.fromkeys(keys - {f"{redis_prefix}:closed:{RUN}"}, no_expiry)
    assert set(after_close) == keys
    assert all(50_000 < ttl <= 60_000 for ttl in after_close.values())
    assert entry_ids == ["2-0", "3-0", "4-0", "4-1"]  # exact trim to 3, then the close marker


async def test_publishers_in_several_processes_share_one_sequence(
    redis_client: Redis, redis_prefix: str
) -> None:
    settings = settings_for(redis_prefix, heartbeat_seconds=60)
    processes = [await RedisStreamBridge.from_url(settings) for _ in range(4)]
    try:
        reader, *publishers = processes
        await publishers[0].open(RUN)

        async with asyncio.TaskGroup() as group:
            watching = group.create_task(collect(reader, RUN))
            await asyncio.sleep(0.02)
            published = await asyncio.gather(
                *(
                    bridge.publish(RUN, "custom", {"from": p, "n": n})
                    for n in range(60)
                    for p, bridge in enumerate(publishers)
                )
            )
            await publishers[1].close(RUN)

        expected = sorted(
            (
                StreamEvent(event_id, "custom", {"from": p, "n": n})
                for (n, p), event_id in zip(
                    ((n, p) for n in range(60) for p in range(3)), published, strict=True
                )
            ),
            key=lambda event: event.id,
        )
        assert sorted(published) == list(range(1, 181))
        assert watching.result() == expected
        assert await collect(publishers[2], RUN) == expected
    finally:
        for bridge in processes:
            await bridge.aclose()


@pytest.mark.parametrize(
    ("protocol", "decode_responses"), [(2, False), (2, True), (3, False), (3, True)]
)
async def test_any_client_flavour_works(
    redis_client: Redis, redis_prefix: str, protocol: int, decode_responses: bool
) -> None:
    client = Redis.from_url(REDIS_URL, protocol=protocol, decode_responses=decode_responses)
    bridge = RedisStreamBridge(settings_for(redis_prefix, retention_events=4), client)
    try:
        await bridge.open(RUN)
        events = sample_events(6)
        await publish_all(bridge, RUN, events)
        await bridge.close(RUN)

        got = {after: await collect(bridge, RUN, after=after) for after in (0, 2, 6)}

        assert got == {0: [StreamGap(0, 3, 6)], 2: events[2:], 6: []}
        assert (await bridge.exists(RUN), await bridge.latest_id(RUN)) == (True, 6)
    finally:
        await client.aclose()


async def test_factory_builds_a_redis_bridge(redis_client: Redis, redis_prefix: str) -> None:
    bridge = await open_stream_bridge(settings_for(redis_prefix))
    try:
        assert isinstance(bridge, RedisStreamBridge)
        await bridge.open(RUN)
        assert await bridge.publish(RUN, "values", {}) == 1
        assert await redis_client.get(f"{redis_prefix}:seq:{RUN}") == b"1"
    finally:
        await bridge.aclose()


async def test_unreachable_server_is_a_retryable_error() -> None:
    settings = StreamSettings(backend="redis", redis_url="redis://127.0.0.1:1/0")

    with pytest.raises(StreamUnavailable) as raised:
        await open_stream_bridge(settings)

    assert (raised.value.code, raised.value.retryable) == ("stream_unavailable", True)
