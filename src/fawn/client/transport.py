"""An httpx transport that calls an ASGI app in this process, streaming both ways.

httpx's own ``ASGITransport`` runs the app to completion and buffers the whole response
before returning it, which turns an SSE stream into one late blob and a long ``wait`` into a
hang. Here each request runs the app as a task of its own: the response is returned as soon
as the app has sent its status and headers, its body arrives chunk by chunk, and closing the
response tells the app the client went away (``http.disconnect``), as a socket would.

`asgi_lifespan` drives the app's ``lifespan`` protocol, so the services the app owns are
opened before the first request and closed after the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import httpx

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

# Chunks the app may run ahead of a slow reader before `send` waits (back-pressure).
_BUFFERED_CHUNKS = 64


class LifespanError(RuntimeError):
    """The app refused to start (its lifespan sent ``lifespan.startup.failed``)."""


class InProcessTransport(httpx.AsyncBaseTransport):
    """Serve httpx requests by calling ``app`` directly; every request task is owned here."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        self._app = app
        self._client = client
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = _Exchange(request)
        task = asyncio.create_task(self._run(exchange), name=f"asgi {request.method}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            status, headers = await exchange.started(task)
        except BaseException:
            await _finish(task)
            raise
        return httpx.Response(
            status, headers=headers, stream=_ResponseBody(exchange, task), request=request
        )

    async def aclose(self) -> None:
        for task in list(self._tasks):
            await _finish(task)

    async def _run(self, exchange: _Exchange) -> None:
        try:
            await self._app(exchange.scope(self._client), exchange.receive, exchange.send)
        except Exception:
            if not exchange.has_started:
                raise
            # A real server would log it and close the connection: the body just ends.
            log.exception("the app failed after sending a response")
        finally:
            exchange.close_body()


class _Exchange:
    """One request/response pair between httpx and the app."""

    def __init__(self, request: httpx.Request) -> None:
        self.request = request
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue(_BUFFERED_CHUNKS)
        self.disconnected = asyncio.Event()
        self._start: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        self._body = request.stream.__aiter__()  # type: ignore[union-attr]
        self._body_done = False
        self.body_closed = False

    @property
    def has_started(self) -> bool:
        return self._start.done()

    def scope(self, client: tuple[str, int]) -> dict[str, Any]:
        url = self.request.url
        default_port = 443 if url.scheme == "https" else 80
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": self.request.method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?", 1)[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in self.request.headers.raw],
            "client": client,
            "server": (url.host, url.port or default_port),
            "state": {},
        }

    async def started(self, task: asyncio.Task[None]) -> tuple[int, list[tuple[bytes, bytes]]]:
        """The status and headers, once sent; the app's exception if it failed first."""
        waiting: set[asyncio.Future[Any]] = {self._start, task}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if self._start.done():
            return self._start.result()
        task.result()  # re-raises the app's exception
        raise RuntimeError("the app returned without sending a response")

    async def receive(self) -> Message:
        if not self._body_done:
            try:
                chunk = await self._body.__anext__()
            except StopAsyncIteration:
                self._body_done = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return {"type": "http.request", "body": bytes(chunk), "more_body": True}
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", ())]
            self._start.set_result((int(message["status"]), headers))
        elif message["type"] == "http.response.body":
            if self.disconnected.is_set():
                return
            body = bytes(message.get("body", b""))
            if body:
                await self.chunks.put(body)
            if not message.get("more_body", False):
                self.close_body()

    def close_body(self) -> None:
        if not self.body_closed:
            self.body_closed = True
            # The reader may be gone; never block the app on a full queue here.
            with contextlib.suppress(asyncio.QueueFull):
                self.chunks.put_nowait(None)


class _ResponseBody(httpx.AsyncByteStream):
    def __init__(self, exchange: _Exchange, task: asyncio.Task[None]) -> None:
        self._exchange = exchange
        self._task = task

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._exchange.chunks
        while not (self._exchange.body_closed and chunks.empty()):
            chunk = await chunks.get()
            if chunk is None:
                return
            yield chunk

    async def aclose(self) -> None:
        self._exchange.disconnected.set()
        await _finish(self._task)


async def _finish(task: asyncio.Task[None]) -> None:
    """Give the app a moment to see the disconnect, then cancel it; never leave it running."""
    if not task.done():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=1.0)
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


@contextlib.asynccontextmanager
async def asgi_lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run the app's startup before the block and its shutdown after it."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    replies: asyncio.Queue[Message] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}

    async def serve() -> None:
        await app(scope, inbox.get, replies.put)

    task = asyncio.create_task(serve(), name="asgi lifespan")
    try:
        await inbox.put({"type": "lifespan.startup"})
        await _expect(task, replies, "lifespan.startup.complete")
        yield
        await inbox.put({"type": "lifespan.shutdown"})
        await _expect(task, replies, "lifespan.shutdown.complete")
        await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _expect(task: asyncio.Task[None], replies: asyncio.Queue[Message], wanted: str) -> None:
    reply = asyncio.ensure_future(replies.get())
    waiting: set[asyncio.Future[Any]] = {reply, task}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not reply.done():
            reply.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reply
    if not reply.done() or reply.cancelled():
        task.result()  # the app's own exception says best why it stopped
        raise LifespanError(f"the app stopped before {wanted}")
    message = reply.result()
    if message["type"] != wanted:
        if task.done():
            task.result()
        else:
            # Starlette re-raises right after reporting a failure: surface that exception.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=5.0)
            if task.done():
                task.result()
        raise LifespanError(str(message.get("message") or f"{message['type']}"))
