"""Notifications between the parts of a deployment: "look again", never the truth itself.

A notification tells every process (or, with one process, every waiter in it) that something
changed — a run to cancel, a thread queue with work, a run that ended — so that waiters wake
at once instead of polling. The records in the database stay the truth: a waiter woken by a
notification re-reads them, and since a notification can be lost (Redis restarting), every
waiter also re-reads on a slow safety timer and whenever the notifier reports that it may
have missed something (:meth:`Notifier.on_resync`).

Topics and their messages (JSON objects of strings):

- ``cancel`` ``{run_id, action}``: the owner of the run stops it.
- ``queue`` ``{thread_id}``: the thread's queue changed; a worker with a free slot claims.
- ``run`` ``{run_id, thread_id, status}``: a run was admitted or ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

import orjson
from redis import exceptions as redis_errors
from redis.asyncio import Redis

log = logging.getLogger(__name__)

Topic = Literal["cancel", "queue", "run"]
TOPICS: tuple[Topic, ...] = ("cancel", "queue", "run")
Message = Mapping[str, str]
Handler = Callable[[Message], None]


class Notifier(Protocol):
    def subscribe(self, topic: Topic, handler: Handler) -> None:
        """Call ``handler`` (on the event loop, never concurrently) for each message."""
        ...

    def on_resync(self, handler: Callable[[], None]) -> None:
        """Call ``handler`` after messages may have been missed (a reconnect)."""
        ...

    async def publish(self, topic: Topic, message: Message) -> bool:
        """Send ``message`` to every subscriber of every process; False when it could not
        be sent (the waiters' safety timers cover it). Never raises for an outage."""
        ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


class _Handlers:
    def __init__(self) -> None:
        self.topics: dict[str, list[Handler]] = {topic: [] for topic in TOPICS}
        self.resync: list[Callable[[], None]] = []

    def dispatch(self, topic: str, message: Message) -> None:
        for handler in self.topics.get(topic, ()):
            try:
                handler(message)
            except Exception:
                log.exception("notification handler failed for %s", topic)

    def resynced(self) -> None:
        for handler in self.resync:
            try:
                handler()
            except Exception:
                log.exception("resync handler failed")


class MemoryNotifier:
    """One process: messages are delivered on the next turn of the event loop."""

    def __init__(self) -> None:
        self._handlers = _Handlers()

    def subscribe(self, topic: Topic, handler: Handler) -> None:
        self._handlers.topics[topic].append(handler)

    def on_resync(self, handler: Callable[[], None]) -> None:
        self._handlers.resync.append(handler)

    async def publish(self, topic: Topic, message: Message) -> bool:
        asyncio.get_running_loop().call_soon(self._handlers.dispatch, topic, dict(message))
        return True

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class RedisNotifier:
    """Redis pub/sub on ``{prefix}:notify:{topic}``: one subscriber connection per process,
    re-established with backoff after Redis goes away (then every waiter resyncs)."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
        self._handlers = _Handlers()
        self._listener: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()

    @classmethod
    def from_url(cls, url: str, prefix: str) -> RedisNotifier:
        from fawn.streams.redis import connection_options

        return cls(Redis.from_url(url, **connection_options()), prefix)

    def subscribe(self, topic: Topic, handler: Handler) -> None:
        self._handlers.topics[topic].append(handler)

    def on_resync(self, handler: Callable[[], None]) -> None:
        self._handlers.resync.append(handler)

    async def publish(self, topic: Topic, message: Message) -> bool:
        try:
            await self._client.publish(self._channel(topic), orjson.dumps(dict(message)))
        except redis_errors.RedisError as exc:
            log.warning("notification %s not sent (redis: %s)", topic, exc)
            return False
        return True

    async def start(self) -> None:
        """Start listening; returns once subscribed (or after a first failed attempt)."""
        self._listener = asyncio.create_task(self._listen(), name="fawn-notifier")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self._connected.wait()

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await self._client.aclose()

    def _channel(self, topic: str) -> str:
        return f"{self._prefix}:notify:{topic}"

    async def _listen(self) -> None:
        delay = 0.05
        first = True
        while True:
            try:
                await self._receive(resync=not first)
            except (redis_errors.RedisError, OSError) as exc:
                if self._connected.is_set():
                    delay = 0.05
                    log.warning("notifications lost their redis connection (%s)", exc)
                self._connected.clear()
            first = False
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _receive(self, *, resync: bool) -> None:
        channels = {self._channel(t): t for t in TOPICS}
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(*channels)
            self._connected.set()
            if resync:
                self._handlers.resynced()
            while True:
                item = await pubsub.get_message(timeout=5.0)
                if item is None or item.get("type") != "message":
                    continue
                channel = item["channel"]
                topic = channels.get(channel.decode() if isinstance(channel, bytes) else channel)
                if topic is not None:
                    self._handlers.dispatch(topic, orjson.loads(item["data"]))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
