"""Redis stream bridge: one Redis Stream per run, shared by every gateway process.

Keys per run (all expire ``cleanup_delay_seconds`` after close):

- ``{prefix}:seq:{run_id}`` — the id counter; its existence is the stream's existence.
- ``{prefix}:stream:{run_id}`` — entries ``{n}-0`` with fields ``e`` (event name) and ``d``
  (JSON data), trimmed exactly to ``retention_events``; close appends a marker entry
  ``{last}-1`` so blocked readers wake at once instead of at their next heartbeat.
- ``{prefix}:closed:{run_id}`` — the last id, set on close; publishes are refused after it.

Publish and close are Lua scripts, so id allocation and append are one atomic step whatever
the number of publishing processes; ids in a stream are therefore dense, and a reader detects
eviction exactly: the first entry it reads after cursor ``c`` must be ``c + 1``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from redis import exceptions as redis_errors
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from fawn.config import StreamSettings
from fawn.streams.bridge import check_cursor, check_heartbeat
from fawn.streams.events import (
    Heartbeat,
    StreamClosed,
    StreamError,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
    StreamUnavailable,
)

_NOT_FOUND = "FAWN_STREAM_NOT_FOUND"
_CLOSED = "FAWN_STREAM_CLOSED"
_READ_BATCH = 1000

# KEYS: seq, stream, closed. ARGV: maxlen, event, data, wanted id (0: the next one).
_PUBLISH = f"""
local want = tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[3]) == 1 then return redis.error_reply('{_CLOSED}') end
local current = redis.call('GET', KEYS[1])
if not current and want == 0 then return redis.error_reply('{_NOT_FOUND}') end
current = tonumber(current or 0)
if want > 0 then
  if current >= want then return want end
  if current < want - 1 then redis.call('SET', KEYS[1], want - 1) end
end
local n = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[1], string.format('%d-0', n), 'e', ARGV[2], 'd', ARGV[3])
return n
"""

# KEYS: seq, stream, closed. ARGV: maxlen (retention + 1 for the marker), ttl in ms.
_CLOSE = f"""
local n = redis.call('GET', KEYS[1])
if not n then return redis.error_reply('{_NOT_FOUND}') end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
redis.call('SET', KEYS[3], n)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[1], n .. '-1', 'closed', n)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
return 1
"""


@dataclass(frozen=True, slots=True)
class _Keys:
    seq: str
    stream: str
    closed: str


class RedisStreamBridge:
    """A :class:`~fawn.streams.bridge.StreamBridge` on Redis Streams.

    ``client`` runs the short commands (publish, close, lookups); ``reader``, when given, runs
    the subscribers' blocking ``XREAD`` so that many idle subscribers cannot exhaust the pool
    publishers need. Each live subscriber holds one ``reader`` connection while it blocks (at
    most one heartbeat interval at a time). Clients may speak RESP2 or RESP3, with or without
    ``decode_responses``; a ``socket_timeout`` on ``reader`` must exceed the heartbeat
    interval. :meth:`aclose` closes the clients only when the bridge owns them
    (:meth:`from_url`). The publish and close scripts touch three keys of one run, so a
    Redis Cluster deployment is not supported as is.
    """

    def __init__(
        self,
        settings: StreamSettings,
        client: Redis,
        *,
        reader: Redis | None = None,
        owns_clients: bool = False,
    ) -> None:
        self._settings = settings
        self._client = client
        self._reader = client if reader is None else reader
        self._owns_clients = owns_clients
        self._publish = client.register_script(_PUBLISH)
        self._close = client.register_script(_CLOSE)

    @classmethod
    async def from_url(
        cls,
        settings: StreamSettings,
        *,
        command_connections: int = 32,
        reader_connections: int = 65_536,
    ) -> RedisStreamBridge:
        """Connect to ``settings.redis_url`` and check that the server answers.

        Commands share a blocking pool of ``command_connections`` (a burst of publishes waits
        for a connection instead of failing); subscribers get up to ``reader_connections``.
        """
        url = settings.redis_url
        client = Redis.from_pool(
            BlockingConnectionPool.from_url(
                url, max_connections=command_connections, **connection_options()
            )
        )
        reader = Redis.from_url(url, max_connections=reader_connections, **connection_options())
        bridge = cls(settings, client, reader=reader, owns_clients=True)
        try:
            with _translated(None):
                await client.ping()
        except BaseException:
            await bridge.aclose()
            raise
        return bridge

    async def open(self, run_id: str) -> None:
        with _translated(run_id):
            await self._client.set(self._keys(run_id).seq, 0, nx=True)

    async def publish(
        self, run_id: str, event: str, data: Any, *, event_id: int | None = None
    ) -> int:
        keys = self._keys(run_id)
        args: list[int | str | bytes] = [
            self._settings.retention_events,
            event,
            orjson.dumps(data),
            event_id or 0,
        ]
        with _translated(run_id):
            return int(await self._publish(keys=[keys.seq, keys.stream, keys.closed], args=args))

    async def close(self, run_id: str) -> None:
        keys = self._keys(run_id)
        ttl_ms = round(self._settings.cleanup_delay_seconds * 1000)
        args = [self._settings.retention_events + 1, ttl_ms]
        with _translated(run_id):
            await self._close(keys=[keys.seq, keys.stream, keys.closed], args=args)

    async def subscribe(
        self,
        run_id: str,
        *,
        after: int | None = None,
        heartbeat_seconds: float | None = None,
    ) -> AsyncIterator[StreamItem]:
        cursor = check_cursor(after)
        heartbeat = check_heartbeat(heartbeat_seconds, self._settings.heartbeat_seconds)
        block_ms = max(1, round(heartbeat * 1000))
        keys = self._keys(run_id)
        if await self._finished_before(keys, run_id, cursor):
            return
        while True:
            entries = await self._read(keys, run_id, cursor, block_ms)
            if not entries:
                if await self._finished_before(keys, run_id, cursor):
                    return
                yield Heartbeat()
                continue
            for entry_id, fields in entries:
                n, is_close_marker = _parse_entry_id(entry_id)
                if is_close_marker and n == cursor:
                    return
                if is_close_marker or n != cursor + 1:
                    yield await self._gap(keys, run_id, cursor)
                    return
                yield StreamEvent(n, _text(_field(fields, "e")), orjson.loads(_field(fields, "d")))
                cursor = n

    async def exists(self, run_id: str) -> bool:
        with _translated(run_id):
            return bool(await self._client.exists(self._keys(run_id).seq))

    async def latest_id(self, run_id: str) -> int | None:
        with _translated(run_id):
            raw = await self._client.get(self._keys(run_id).seq)
        if raw is None:
            raise StreamNotFound(f"no stream for run {run_id}", run_id=run_id)
        return int(raw) or None

    async def aclose(self) -> None:
        if self._owns_clients:
            await self._client.aclose()
            if self._reader is not self._client:
                await self._reader.aclose()

    def _keys(self, run_id: str) -> _Keys:
        prefix = self._settings.redis_prefix
        return _Keys(
            seq=f"{prefix}:seq:{run_id}",
            stream=f"{prefix}:stream:{run_id}",
            closed=f"{prefix}:closed:{run_id}",
        )

    async def _finished_before(self, keys: _Keys, run_id: str, cursor: int) -> bool:
        """Whether the stream is closed with nothing after ``cursor``; ``StreamNotFound`` if gone."""
        with _translated(run_id):
            latest, closed_at = await self._client.mget(keys.seq, keys.closed)
        if latest is None:
            raise StreamNotFound(f"no stream for run {run_id}", run_id=run_id)
        return closed_at is not None and cursor >= int(closed_at)

    async def _read(
        self, keys: _Keys, run_id: str, cursor: int, block_ms: int
    ) -> list[tuple[Any, Any]]:
        """Entries after ``cursor`` (the close marker ``{cursor}-1`` included), or [] on timeout."""
        with _translated(run_id):
            response: Any = await self._reader.xread(
                {keys.stream: f"{cursor}-0"}, count=_READ_BATCH, block=block_ms
            )
        if not response:
            return []
        if isinstance(response, dict):  # RESP3: {stream: [entries]}
            (entries,) = response.values()
            return list(entries[0])
        return list(response[0][1])  # RESP2: [[stream, entries]]

    async def _gap(self, keys: _Keys, run_id: str, cursor: int) -> StreamGap:
        with _translated(run_id):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xrange(keys.stream, "-", "+", count=1)
                pipe.get(keys.seq)
                first, latest = await pipe.execute()
        earliest = None
        if first:
            n, is_close_marker = _parse_entry_id(first[0][0])
            earliest = None if is_close_marker else n
        return StreamGap(cursor, earliest, (int(latest) or None) if latest is not None else None)


def connection_options() -> dict[str, Any]:
    """How every fawn Redis connection behaves: a connection idle for a while is pinged before
    use, and a command that meets a dead connection (Redis restarted) reconnects and is
    retried, briefly, instead of failing the request."""
    return {
        "health_check_interval": 5,
        "socket_connect_timeout": 2,
        "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), 2),
        "retry_on_error": [redis_errors.ConnectionError, redis_errors.TimeoutError],
    }


@contextmanager
def _translated(run_id: str | None) -> Iterator[None]:
    """Re-raise Redis errors as the streams subsystem's own."""
    try:
        yield
    except redis_errors.ResponseError as exc:
        message = str(exc)
        if message.startswith(_NOT_FOUND):
            raise StreamNotFound(f"no stream for run {run_id}", run_id=run_id) from exc
        if message.startswith(_CLOSED):
            raise StreamClosed(f"the stream of run {run_id} is closed", run_id=run_id) from exc
        raise StreamError(f"redis refused a stream command: {message}", run_id=run_id) from exc
    except (redis_errors.ConnectionError, redis_errors.TimeoutError) as exc:
        raise StreamUnavailable(f"redis is unreachable: {exc}", run_id=run_id) from exc
    except redis_errors.RedisError as exc:
        raise StreamError(f"redis stream command failed: {exc}", run_id=run_id) from exc


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _field(fields: dict[Any, Any], name: str) -> Any:
    value = fields.get(name.encode())
    return fields[name] if value is None else value


def _parse_entry_id(raw: bytes | str) -> tuple[int, bool]:
    """``"12-0"`` → (12, False) for an event; ``"12-1"`` → (12, True) for the close marker."""
    n, _, seq = _text(raw).partition("-")
    return int(n), seq == "1"
