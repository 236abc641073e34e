"""Pick the stream bridge the settings ask for."""

from __future__ import annotations

from fawn.config import StreamSettings
from fawn.streams.bridge import StreamBridge
from fawn.streams.memory import MemoryStreamBridge


async def open_stream_bridge(settings: StreamSettings) -> StreamBridge:
    """A ready bridge; the caller owns it and calls ``aclose()`` on shutdown."""
    if settings.backend == "redis":
        from fawn.streams.redis import RedisStreamBridge  # redis loads only when configured

        return await RedisStreamBridge.from_url(settings)
    return MemoryStreamBridge(settings)
