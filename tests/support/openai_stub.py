"""An OpenAI-compatible Chat Completions server that answers from scripts.

Tests and benchmarks point the real provider code (``langchain_openai.ChatOpenAI``) at it, so
the whole HTTP path is exercised without an LLM service.

Endpoints
    ``POST /v1/chat/completions`` (also ``/chat/completions``): non-streaming, or SSE with
    ``"stream": true`` (``stream_options.include_usage`` adds the final usage chunk).
    ``GET /v1/models``: lists the model ``stub``.
    ``POST /_stub/scripts`` ``{"key": ..., "turns": [...], "title": optional}``: register.
    ``DELETE /_stub/scripts/{key}``: forget a script and its request log.
    ``GET /_stub/requests?key=...``: request bodies matched to ``key``, oldest first (the last
    200 per key); without ``key``, the requests that matched no script.

Scripting rules (stateless and deterministic, so parallel tests can share one server)
    1. **Matching.** A request belongs to the script whose key occurs as a substring of the
       text of its *first* ``user`` message (for a list of content parts, the text parts joined
       by newlines). If several keys occur, the longest wins.
    2. **Turn index** = the number of ``assistant`` messages in the request. Turn format and the
       past-the-end rule are in `fawn.testing.script`: a script that has run out answers with its
       last turn's content, or ``"done"`` if that turn called tools.
    3. **Titles.** A request is a *title request* when its body has no (or empty) ``tools`` and
       any message's text contains the word ``title`` (case-insensitive); the fawn title
       middleware's requests look like that and carry the original user text, so they match the
       conversation's script. If the matched script has a ``title``, a title request is answered
       with it regardless of turn index. (Consequence: in a tool-less conversation whose script
       has a title, do not write "title" in the messages.)
    4. **Unmatched** requests get ``"stub reply"``, or ``"Stub Title"`` for a title request.
    5. A turn's ``delay`` passes before the answer (or its ``error``) starts; ``chunk_delay``
       paces streamed chunks. Streamed content is split by words; tool calls stream like OpenAI
       (a header delta with ``index``, ``id``, ``type`` and name, then argument fragments).
       Tool calls without a scripted id get ``call_<turn index>_<position>``.

Running it
    In the test's event loop: ``stub = OpenAIStub(); await stub.start()``, then
    ``stub.base_url``, ``stub.add_script(...)``, ``await stub.stop()`` (or ``async with``).
    From sync code or a benchmark: ``with StubServerThread() as stub: ...``.
    Standalone: ``python -m tests.support.openai_stub --port N`` prints the base URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Generator, Sequence
from types import TracebackType
from typing import Any, Self

import uvicorn

from fawn.testing.script import Turn, TurnSpec
from tests.support.openai_app import create_app
from tests.support.registry import Script, ScriptRegistry

# The fawn server's own default port; a stub there would shadow a developer's server.
RESERVED_PORT = 2024
_STARTUP_TIMEOUT = 10.0


class OpenAIStub:
    """The stub server running as a task in the current event loop."""

    def __init__(self, registry: ScriptRegistry | None = None) -> None:
        self.registry = registry if registry is not None else ScriptRegistry()
        self._server: _EmbeddedServer | None = None
        self._task: asyncio.Task[None] | None = None
        self._host = ""
        self._port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Bind ``host:port`` (port 0: a free port) and serve until `stop`."""
        if self._task is not None:
            raise RuntimeError("the stub is already running")
        sock = bind_socket(host, port)
        self._host, self._port = host, sock.getsockname()[1]
        self._server = _EmbeddedServer(_server_config(self.registry, host, self._port))
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="openai-stub")
        try:
            async with asyncio.timeout(_STARTUP_TIMEOUT):
                while not self._server.started:
                    if self._task.done():
                        self._task.result()  # Raises the startup error.
                        raise RuntimeError("the stub server exited during startup")
                    await asyncio.sleep(0.005)
        except BaseException:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                await self._task
            self._server = self._task = None
            raise

    async def stop(self) -> None:
        """Stop serving; in-flight requests get a short grace period, then are cancelled."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        try:
            await self._task
        finally:
            self._server = self._task = None

    @property
    def port(self) -> int:
        if self._task is None:
            raise RuntimeError("the stub is not running")
        return self._port

    @property
    def base_url(self) -> str:
        """The OpenAI ``base_url``, e.g. ``http://127.0.0.1:41234/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    def add_script(
        self, key: str, turns: Sequence[Turn | TurnSpec | str], title: str | None = None
    ) -> Script:
        """Register (or replace) the script answered to conversations mentioning ``key``."""
        return self.registry.add(key, turns, title=title)

    def remove_script(self, key: str) -> bool:
        return self.registry.remove(key)

    def requests_for(self, key: str | None) -> list[dict[str, Any]]:
        """Request bodies matched to ``key`` (``None``: unmatched), oldest first."""
        return self.registry.requests_for(key)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()


class StubServerThread:
    """The stub server on a thread of its own, for sync fixtures and benchmark scripts.

    The thread is not a daemon: `stop` (or leaving the ``with`` block) ends and joins it.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        registry: ScriptRegistry | None = None,
    ) -> None:
        self.registry = registry if registry is not None else ScriptRegistry()
        self._stub = OpenAIStub(self.registry)
        self._address = (host, port)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the stub thread is already running")
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._main(),), name="openai-stub"
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._thread = None
            raise self._error

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            # The loop is already closed if the server thread ended on its own.
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()
        self._thread = None

    @property
    def base_url(self) -> str:
        return self._stub.base_url

    @property
    def port(self) -> int:
        return self._stub.port

    def add_script(
        self, key: str, turns: Sequence[Turn | TurnSpec | str], title: str | None = None
    ) -> Script:
        return self.registry.add(key, turns, title=title)

    def remove_script(self, key: str) -> bool:
        return self.registry.remove(key)

    def requests_for(self, key: str | None) -> list[dict[str, Any]]:
        return self.registry.requests_for(key)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            await self._stub.start(*self._address)
        except BaseException as exc:
            self._error = exc
            return
        finally:
            self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await self._stub.stop()


def run_in_thread(host: str = "127.0.0.1", port: int = 0) -> StubServerThread:
    """Start a `StubServerThread` and return it; the caller must `stop` it."""
    server = StubServerThread(host, port)
    server.start()
    return server


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening-ready socket on ``host:port``; port 0 picks a free port."""
    if port == RESERVED_PORT:
        raise ValueError(f"port {RESERVED_PORT} is the fawn server's; use 0 for a free port")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections;
    # with proto 0 every response would stall ~40 ms on delayed ACKs.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _server_config(registry: ScriptRegistry, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(
        create_app(registry),
        host=host,
        port=port,
        lifespan="off",
        log_config=None,  # Leave the host process's logging alone.
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that embeds it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def _serve_until_signalled(host: str, port: int) -> None:
    stub = OpenAIStub()
    await stub.start(host, port)
    print(stub.base_url, flush=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        await stopping.wait()
    finally:
        await stub.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.openai_stub",
        description="Serve the scripted OpenAI-compatible stub; prints its base URL.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    args = parser.parse_args(argv)
    asyncio.run(_serve_until_signalled(args.host, args.port))


if __name__ == "__main__":
    main()
