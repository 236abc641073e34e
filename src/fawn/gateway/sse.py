"""Server-sent event responses: a run's stream and a thread's stream, as the wire has them.

Every response ends with an ending a client understands: the run's own ``end`` (with
``error`` before it when the run failed — from the stream, or from the run's record when the
stream lost it), a ``gap`` when the cursor is too old, or, when this worker shuts down, a
clean close of a run stream whose run goes on elsewhere (the SDKs then reconnect through
``Location`` with ``Last-Event-ID``) and an ``error`` event ending a thread stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from typing import Any, Literal, get_args

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from fawn.agent.serialize import dumps
from fawn.gateway.stream_events import LangGraphStreamRenderer
from fawn.runs.errors import InvalidInput
from fawn.runs.following import RunItem, ThreadItem
from fawn.runs.outcome import RunEnded
from fawn.streams.events import Heartbeat, StreamEvent, StreamGap
from fawn.streams.sse import (
    HEARTBEAT_FRAME,
    REPLAY_ALL,
    SSE_HEADERS,
    encode_event,
    encode_gap,
)

#: events every subscriber gets, whatever stream modes it asked to see
_CONTROL_EVENTS = frozenset({"metadata", "error", "end"})
_RENDER = LangGraphStreamRenderer()

ThreadStreamMode = Literal["run_modes", "lifecycle", "state_update"]
SHUTDOWN_NOTICE = {
    "error": "ServerShuttingDown",
    "message": "this server is shutting down; reconnect with the last event id to go on",
}


class ReleasableStream(StreamingResponse):
    """A streaming response that ends in one of three ways, told apart: its content ends;
    the client leaves (``on_disconnect`` runs); or ``release`` returns because the worker
    shuts down (``farewell`` is written and the body is closed properly)."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        *,
        release: Callable[[], Awaitable[None]],
        farewell: bytes = b"",
        on_disconnect: Callable[[], None] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self._release = release
        self._farewell = farewell
        self._on_disconnect = on_disconnect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False
        ending: list[str] = []

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        async def streamed() -> None:
            try:
                await self.stream_response(tracked)
            except OSError:  # the client is gone (ASGI 2.4 servers say so on send)
                ending.append("disconnected")
            else:
                ending.append("ended")

        async def disconnected() -> None:
            await self.listen_for_disconnect(receive)
            ending.append("disconnected")

        async def released() -> None:
            await self._release()
            ending.append("released")

        async with anyio.create_task_group() as group:

            async def first_wins(func: Callable[[], Awaitable[None]]) -> None:
                await func()
                group.cancel_scope.cancel()

            for func in (streamed, disconnected, released):
                group.start_soon(first_wins, func)
        if ending[0] == "released":
            await self._say_farewell(send, started)
        elif ending[0] == "disconnected" and self._on_disconnect is not None:
            self._on_disconnect()

    async def _say_farewell(self, send: Send, started: bool) -> None:
        if not started:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
        await send({"type": "http.response.body", "body": self._farewell, "more_body": False})


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


def frame(event: str, data: Any, event_id: str | None = None) -> bytes:
    parts = [b"event: ", event.encode(), b"\ndata: ", dumps(data)]
    if event_id is not None:
        parts += [b"\nid: ", event_id.encode()]
    return b"".join([*parts, b"\n\n"])


def ended_frames(ended: RunEnded) -> bytes:
    """A run's ending read from its record: ``error`` (if it failed), then ``end``."""
    frames = b""
    if ended.error is not None:
        frames += frame(*_RENDER.failed(ended.error))
    return frames + frame(*_RENDER.ended(ended.run_id, ended.status))


def run_stream_response(
    items: AsyncIterator[RunItem],
    thread_id: str,
    run_id: str,
    *,
    release: Callable[[], Awaitable[None]],
    on_disconnect: Callable[[], None] | None = None,
    modes: Collection[str] | None = None,
) -> StreamingResponse:
    """A run's stream; ``on_disconnect`` runs if the client leaves before it ended.
    ``modes`` keeps only the events of those stream modes (plus ``metadata``, ``error``
    and ``end``)."""

    async def frames() -> AsyncIterator[bytes]:
        async for item in items:
            if isinstance(item, StreamEvent):
                mode = event_mode(item.event)
                if modes is None or mode is None or mode in modes:
                    yield encode_event(item)
            elif isinstance(item, Heartbeat):
                yield HEARTBEAT_FRAME
            elif isinstance(item, StreamGap):
                yield gap_frame(item)
                return
            elif isinstance(item, RunEnded):
                yield ended_frames(item)

    headers = {
        **SSE_HEADERS,
        "Location": f"/threads/{thread_id}/runs/{run_id}/stream",
        "Content-Location": f"/threads/{thread_id}/runs/{run_id}",
    }
    return ReleasableStream(frames(), release=release, on_disconnect=on_disconnect, headers=headers)


def parse_thread_modes(raw: Sequence[str] | None) -> frozenset[str]:
    modes = frozenset(raw or ["run_modes"])
    unknown = sorted(modes - set(get_args(ThreadStreamMode)))
    if unknown:
        raise InvalidInput(
            f"unsupported thread stream_mode {', '.join(unknown)}; "
            f"supported: {', '.join(get_args(ThreadStreamMode))}",
            field="stream_mode",
        )
    return modes


def parse_thread_cursor(raw: str | None) -> tuple[str, int] | None:
    """``<run_id>:<event id>``; absent, empty or ``-1`` (the JS SDK's "everything") mean
    from the start."""
    if not raw or raw.strip() == REPLAY_ALL:
        return None
    run_id, sep, event_id = raw.rpartition(":")
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses
    if (
        not sep
        or not run_id
        or not (event_id.isascii() and event_id.isdigit())
        or len(event_id) > 19
    ):
        raise InvalidInput(
            "Last-Event-ID for a thread stream looks like '<run_id>:<event id>'",
            field="Last-Event-ID",
        )
    return run_id, int(event_id)


def _wanted(event: str, modes: frozenset[str]) -> bool:
    if "run_modes" in modes:
        return True
    if "lifecycle" in modes and event in ("metadata", "run_done"):
        return True
    return "state_update" in modes and event == "values"


def _thread_frame(item: ThreadItem) -> tuple[str, bytes]:
    """``run_modes`` names: a run's ``end`` is ``run_done``; ids are ``<run_id>:<id>``."""
    run_id, inner = item.run_id, item.item
    if isinstance(inner, StreamEvent):
        name = "run_done" if inner.event == "end" else inner.event
        return name, frame(name, inner.data, f"{run_id}:{inner.id}")
    if isinstance(inner, StreamGap):
        data = {"run_id": run_id, **inner.as_event_data()}
        return "gap", frame("gap", data, f"{run_id}:{inner.latest or 0}")
    data = {"run_id": run_id, "status": inner.status, "retained": False}
    return "run_done", frame("run_done", data, f"{run_id}:0")


def thread_stream_response(
    items: AsyncIterator[ThreadItem | Heartbeat],
    *,
    modes: frozenset[str],
    release: Callable[[], Awaitable[None]],
) -> StreamingResponse:
    """A thread's stream: open until the client leaves (or this worker shuts down)."""

    async def frames() -> AsyncIterator[bytes]:
        async for item in items:
            if isinstance(item, Heartbeat):
                yield HEARTBEAT_FRAME
                continue
            name, data = _thread_frame(item)
            if _wanted(name, modes):
                yield data

    return ReleasableStream(
        frames(),
        release=release,
        farewell=frame("error", SHUTDOWN_NOTICE),
        headers=dict(SSE_HEADERS),
    )
