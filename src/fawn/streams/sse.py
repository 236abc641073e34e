"""Server-sent events framing, as the LangGraph Agent Server writes it.

A frame is ``event: <name>``, one line of compact JSON in ``data:``, an optional ``id:`` and a
blank line. orjson never writes a raw newline, so ``data`` is always a single line.
"""

from __future__ import annotations

import re
from typing import Final

import orjson

from fawn.streams.bridge import MAX_EVENT_ID
from fawn.streams.events import (
    Heartbeat,
    InvalidCursor,
    StreamError,
    StreamEvent,
    StreamGap,
    StreamItem,
)

HEARTBEAT_FRAME: Final = b": heartbeat\n\n"
GAP_EVENT: Final = "gap"
SSE_HEADERS: Final[dict[str, str]] = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
"""Headers every SSE response carries; the caller sets the ``text/event-stream`` media type."""

_DIGITS = re.compile(r"[0-9]+")
#: The ``Last-Event-ID`` that asks for every event of the run (the JS SDK's convention).
REPLAY_ALL: Final = "-1"


def encode_event(event: StreamEvent, *, with_id: bool = True) -> bytes:
    """One SSE frame; ``with_id=False`` for streams that are not resumable."""
    frame = b"event: " + _event_name(event.event) + b"\ndata: " + orjson.dumps(event.data)
    if with_id:
        frame += b"\nid: " + str(event.id).encode()
    return frame + b"\n\n"


def encode_gap(gap: StreamGap) -> bytes:
    """The ``gap`` frame; it has no id, so a client's ``Last-Event-ID`` stays where it was."""
    return b"event: gap\ndata: " + orjson.dumps(gap.as_event_data()) + b"\n\n"


def encode_item(item: StreamItem, *, with_id: bool = True) -> bytes:
    """Whatever a subscription yields, as bytes for the response body."""
    if isinstance(item, StreamEvent):
        return encode_event(item, with_id=with_id)
    if isinstance(item, StreamGap):
        return encode_gap(item)
    if isinstance(item, Heartbeat):
        return HEARTBEAT_FRAME
    raise TypeError(f"not a stream item: {item!r}")


def parse_last_event_id(header: str | None) -> int | None:
    """The cursor in a ``Last-Event-ID`` header; ``None`` (absent, empty, ``0`` or ``-1``)
    means from the start. ``-1`` is what the JS SDK (and its ``useStream`` hook) sends to
    replay a whole run when it rejoins one after a page reload."""
    if header is None:
        return None
    value = header.strip()
    if not value or value == REPLAY_ALL:
        return None
    if not _DIGITS.fullmatch(value):
        raise InvalidCursor(
            f"Last-Event-ID must be a non-negative integer event id (or -1: all), got {header[:40]!r}"
        )
    # Length first: Python will not even convert more than 4300 digits.
    digits = value.lstrip("0") or "0"
    if len(digits) > len(str(MAX_EVENT_ID)) or int(digits) > MAX_EVENT_ID:
        shown = value if len(value) <= 40 else f"{value[:12]}…({len(value)} digits)"
        raise InvalidCursor(f"Last-Event-ID {shown} is out of range (at most {MAX_EVENT_ID})")
    cursor = int(digits)
    return cursor or None


def _event_name(name: str) -> bytes:
    if "\n" in name or "\r" in name:
        raise StreamError(f"an SSE event name cannot contain a line break: {name!r}")
    return name.encode()
