"""Run event streams: the ``StreamBridge`` seam, its memory and Redis backends, SSE framing."""

from fawn.streams.bridge import MAX_EVENT_ID, StreamBridge
from fawn.streams.events import (
    Heartbeat,
    InvalidCursor,
    StreamClosed,
    StreamError,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
    StreamUnavailable,
)
from fawn.streams.factory import open_notifier, open_stream_bridge
from fawn.streams.memory import MemoryStreamBridge
from fawn.streams.notify import MemoryNotifier, Notifier, Topic
from fawn.streams.sse import (
    HEARTBEAT_FRAME,
    SSE_HEADERS,
    encode_event,
    encode_gap,
    encode_item,
    parse_last_event_id,
)

__all__ = [
    "HEARTBEAT_FRAME",
    "MAX_EVENT_ID",
    "SSE_HEADERS",
    "Heartbeat",
    "InvalidCursor",
    "MemoryNotifier",
    "MemoryStreamBridge",
    "Notifier",
    "StreamBridge",
    "StreamClosed",
    "StreamError",
    "StreamEvent",
    "StreamGap",
    "StreamItem",
    "StreamNotFound",
    "StreamUnavailable",
    "Topic",
    "encode_event",
    "encode_gap",
    "encode_item",
    "open_notifier",
    "open_stream_bridge",
    "parse_last_event_id",
]
