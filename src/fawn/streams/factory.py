"""Pick the stream bridge and the notifier the settings ask for."""

from __future__ import annotations

from fawn.config import StreamSettings
from fawn.streams.bridge import StreamBridge
from fawn.streams.memory import MemoryStreamBridge
from fawn.streams.notify import MemoryNotifier, Notifier


async def open_stream_bridge(settings: StreamSettings) -> StreamBridge:
    """A ready bridge; the caller owns it and calls ``aclose()`` on shutdown."""
    if settings.backend == "redis":
        from fawn.streams.redis import RedisStreamBridge  # redis loads only when configured

        return await RedisStreamBridge.from_url(settings)
    return MemoryStreamBridge(settings)


async def open_notifier(settings: StreamSettings) -> Notifier:
    """A started notifier (Redis pub/sub with the redis backend, in-process otherwise); the
    caller owns it and calls ``aclose()`` on shutdown."""
    notifier: Notifier
    if settings.backend == "redis":
        from fawn.streams.notify import RedisNotifier

        notifier = RedisNotifier.from_url(settings.redis_url, settings.redis_prefix)
    else:
        notifier = MemoryNotifier()
    await notifier.start()
    return notifier
