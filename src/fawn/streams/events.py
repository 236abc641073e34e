"""What a stream carries: events, the gap marker, heartbeats, and the subsystem's errors.

Error tree (every class carries ``code`` and ``retryable`` for the one place that maps errors
to HTTP status codes)::

    StreamError                  stream_error          not retryable
    ├── StreamNotFound           stream_not_found      never opened, or already cleaned up
    ├── StreamClosed             stream_closed         publish after close
    ├── InvalidCursor            invalid_cursor        a Last-Event-ID we cannot read
    └── StreamUnavailable        stream_unavailable    the backend cannot be reached (retryable)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

GAP_HINT = "reload durable state (threads.get_state / runs.get) and rejoin from the latest id"


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One published event.

    ``id`` is per run, starts at 1 and grows by exactly one per publish, so a cursor names a
    position without ambiguity. ``event`` is the SSE event name (``values``, ``messages``,
    ``updates|sub:1``, ``error``, ``end``...); ``data`` is a JSON-able value.
    """

    id: int
    event: str
    data: Any


@dataclass(frozen=True, slots=True)
class StreamGap:
    """The events right after the subscriber's cursor are no longer retained.

    Streams are views and records are truth: a subscriber that receives a gap must reload the
    durable state and rejoin from ``latest``. ``earliest``/``latest`` bound the ids still
    retained (``None`` when nothing is).
    """

    requested: int
    earliest: int | None
    latest: int | None

    def as_event_data(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "earliest": self.earliest,
            "latest": self.latest,
            "hint": GAP_HINT,
        }


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Nothing happened for a heartbeat interval; lets the transport keep the line alive."""


StreamItem = StreamEvent | StreamGap | Heartbeat


class StreamError(Exception):
    """Root of the streams subsystem's errors."""

    code: ClassVar[str] = "stream_error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class StreamNotFound(StreamError):
    """No stream for this run: it was never opened, or it was cleaned up after close."""

    code = "stream_not_found"


class StreamClosed(StreamError):
    """The run's stream is closed; nothing more can be published to it."""

    code = "stream_closed"


class InvalidCursor(StreamError):
    """A resume cursor (``Last-Event-ID`` or ``after``) that is not one of our ids."""

    code = "invalid_cursor"


class StreamUnavailable(StreamError):
    """The stream backend could not be reached; trying again later may work."""

    code = "stream_unavailable"
    retryable = True
