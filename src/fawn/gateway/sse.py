"""Server-sent event responses over a run's stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from starlette.responses import StreamingResponse

from fawn.streams.bridge import StreamBridge
from fawn.streams.events import Heartbeat, StreamEvent, StreamGap
from fawn.streams.sse import HEARTBEAT_FRAME, SSE_HEADERS, encode_event, encode_gap


def run_stream_response(
    bridge: StreamBridge,
    thread_id: str,
    run_id: str,
    *,
    after: int | None,
    heartbeat_seconds: float,
    on_disconnect: Callable[[], None] | None = None,
) -> StreamingResponse:
    """Replay from ``after`` then follow live; ``on_disconnect`` runs if the client leaves
    before the stream ended."""

    async def frames() -> AsyncIterator[bytes]:
        finished = False
        try:
            async for item in bridge.subscribe(
                run_id, after=after, heartbeat_seconds=heartbeat_seconds
            ):
                if isinstance(item, StreamEvent):
                    yield encode_event(item)
                elif isinstance(item, Heartbeat):
                    yield HEARTBEAT_FRAME
                elif isinstance(item, StreamGap):
                    yield encode_gap(item)
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
