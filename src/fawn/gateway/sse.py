"""Server-sent event responses over a run's stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection

from starlette.responses import StreamingResponse

from fawn.agent.serialize import dumps
from fawn.runs.thread_stream import ThreadEvent
from fawn.streams.bridge import StreamBridge
from fawn.streams.events import Heartbeat, StreamEvent, StreamGap
from fawn.streams.sse import HEARTBEAT_FRAME, SSE_HEADERS, encode_event, encode_gap

#: events every subscriber gets, whatever stream modes it asked to see
_CONTROL_EVENTS = frozenset({"metadata", "error", "end"})


def event_mode(event: str) -> str | None:
    """The API stream mode that produced an event name (``None`` for control events)."""
    base = event.split("|", 1)[0]
    if base in _CONTROL_EVENTS:
        return None
    if base == "messages":
        return "messages-tuple"
    if base.startswith("messages/"):
        return "messages"
    return base


def gap_frame(gap: StreamGap) -> bytes:
    """The ``gap`` frame, carrying the latest id as its ``id:``.

    A client that reconnects by itself after the stream closes (the SDK does while the run is
    active, so does a browser's EventSource) then resumes after the latest event instead of
    asking for the same lost cursor again and getting the same gap in a loop. The client has
    been told to reload durable state, which covers the events it skipped.
    """
    frame = encode_gap(gap)
    if gap.latest is None:
        return frame
    return frame[:-1] + b"id: " + str(gap.latest).encode() + b"\n\n"


def run_stream_response(
    bridge: StreamBridge,
    thread_id: str,
    run_id: str,
    *,
    after: int | None,
    heartbeat_seconds: float,
    on_disconnect: Callable[[], None] | None = None,
    modes: Collection[str] | None = None,
) -> StreamingResponse:
    """Replay from ``after`` then follow live; ``on_disconnect`` runs if the client leaves
    before the stream ended. ``modes`` keeps only the events of those stream modes (plus
    ``metadata``, ``error`` and ``end``)."""

    async def frames() -> AsyncIterator[bytes]:
        finished = False
        try:
            async for item in bridge.subscribe(
                run_id, after=after, heartbeat_seconds=heartbeat_seconds
            ):
                if isinstance(item, StreamEvent):
                    mode = event_mode(item.event)
                    if modes is None or mode is None or mode in modes:
                        yield encode_event(item)
                elif isinstance(item, Heartbeat):
                    yield HEARTBEAT_FRAME
                elif isinstance(item, StreamGap):
                    yield gap_frame(item)
                    break
            finished = True
        finally:
            if not finished and on_disconnect is not None:
                on_disconnect()

    headers = {
        **SSE_HEADERS,
        "Location": f"/threads/{thread_id}/runs/{run_id}/stream",
        "Content-Location": f"/threads/{thread_id}/runs/{run_id}",
    }
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)


def thread_stream_response(items: AsyncIterator[ThreadEvent | Heartbeat]) -> StreamingResponse:
    """A thread's stream: open until the client leaves."""

    async def frames() -> AsyncIterator[bytes]:
        async for item in items:
            if isinstance(item, Heartbeat):
                yield HEARTBEAT_FRAME
            else:
                yield b"".join(
                    (
                        b"event: ",
                        item.event.encode(),
                        b"\ndata: ",
                        dumps(item.data),
                        b"\nid: ",
                        item.id.encode(),
                        b"\n\n",
                    )
                )

    return StreamingResponse(frames(), media_type="text/event-stream", headers=dict(SSE_HEADERS))
