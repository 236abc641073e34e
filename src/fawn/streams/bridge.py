"""The seam between a run's worker (the publisher) and its SSE consumers (the subscribers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from fawn.streams.events import InvalidCursor, StreamItem

# Redis stream ids are two unsigned 64-bit halves; keep cursors well inside that range so
# every backend accepts the same cursors.
MAX_EVENT_ID = 2**63 - 1


class StreamBridge(Protocol):
    """A bounded, resumable event stream per run.

    Ids are per run, start at 1 and grow by exactly one per publish. Each stream keeps the most
    recent ``retention_events`` events; a subscriber whose cursor points before that window
    gets one :class:`~fawn.streams.events.StreamGap` and nothing else.
    """

    async def open(self, run_id: str) -> None:
        """Create the run's stream. Idempotent: opening an existing (even closed) stream is a no-op."""
        ...

    async def publish(
        self, run_id: str, event: str, data: Any, *, event_id: int | None = None
    ) -> int:
        """Append an event and return its id.

        Raises ``StreamNotFound`` for an unknown run and ``StreamClosed`` after :meth:`close`.
        ``data`` must be JSON-able and must not be mutated after publishing.

        ``event_id`` is for the run's one publisher, which numbers its events itself: the
        call is idempotent (an id already published is not appended again, so a retry after
        a lost reply duplicates nothing), and a stream that vanished (a backend restarted
        without persistence) is recreated so that ids keep growing from where they were;
        subscribers behind the lost events get a gap.
        """
        ...

    async def close(self, run_id: str) -> None:
        """Mark the stream finished and schedule its cleanup after ``cleanup_delay_seconds``.

        Subscribers drain what is retained and stop. Idempotent; ``StreamNotFound`` if unknown.
        """
        ...

    def subscribe(
        self,
        run_id: str,
        *,
        after: int | None = None,
        heartbeat_seconds: float | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Yield the events with id > ``after`` (``None`` or 0: from the first), then live ones.

        Yields ``Heartbeat()`` after ``heartbeat_seconds`` (default: the settings) without an
        event, stops after the last event of a closed stream, and yields exactly one
        ``StreamGap`` then stops when an event after the cursor is no longer retained.
        Raises ``StreamNotFound`` on first iteration for an unknown run, ``InvalidCursor`` for
        a negative or out-of-range ``after``.
        """
        ...

    async def exists(self, run_id: str) -> bool:
        """Whether the run's stream is open or closed-but-retained."""
        ...

    async def latest_id(self, run_id: str) -> int | None:
        """The id of the last published event, ``None`` before the first; ``StreamNotFound`` if unknown."""
        ...

    async def aclose(self) -> None:
        """Release what the bridge owns (timers, connections)."""
        ...


def check_cursor(after: int | None) -> int:
    """Normalize a subscriber cursor: ``None`` means 0 (from the first event)."""
    if after is None:
        return 0
    if not 0 <= after <= MAX_EVENT_ID:
        raise InvalidCursor(f"cursor must be between 0 and {MAX_EVENT_ID}, got {after}")
    return after


def check_heartbeat(heartbeat_seconds: float | None, default: float) -> float:
    """The heartbeat interval to use; a non-positive one would spin, so it is refused."""
    seconds = default if heartbeat_seconds is None else heartbeat_seconds
    if not seconds > 0:
        raise ValueError(f"heartbeat_seconds must be positive, got {seconds}")
    return seconds
