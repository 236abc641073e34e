"""The sign-in limit: at most ``max_failures`` attempts per client address and window.

An attempt is counted before the password is checked (so a burst of parallel guesses is
counted as it arrives, not after), and a successful sign-in clears the address's count. With
Redis the count is shared by every worker; without it each process counts alone.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Sequence
from typing import Protocol

from redis.asyncio import Redis

from fawn.config.settings import LoginRateLimitSettings
from fawn.gateway.auth.errors import TooManyAttempts

#: Addresses tracked by one process before the oldest are forgotten.
MAX_TRACKED = 10_000


class LoginLimiter(Protocol):
    async def attempt(self, client: str) -> None:
        """Count an attempt; :class:`TooManyAttempts` when over the limit."""
        ...

    async def succeeded(self, client: str) -> None:
        """Forget the client's attempts."""
        ...

    async def aclose(self) -> None: ...


class MemoryLimiter:
    def __init__(self, settings: LoginRateLimitSettings) -> None:
        self._max = settings.max_failures
        self._window = settings.window_seconds
        self._counts: dict[str, tuple[int, float]] = {}

    async def attempt(self, client: str) -> None:
        now = time.monotonic()
        count, ends = self._counts.get(client, (0, 0.0))
        if ends <= now:
            count, ends = 0, now + self._window
        count += 1
        self._counts[client] = (count, ends)
        self._forget_some(now)
        if count > self._max:
            raise TooManyAttempts(max(1, math.ceil(ends - now)))

    async def succeeded(self, client: str) -> None:
        self._counts.pop(client, None)

    def _forget_some(self, now: float) -> None:
        if len(self._counts) <= MAX_TRACKED:
            return
        self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
        if len(self._counts) > MAX_TRACKED:
            oldest_first = sorted(self._counts.items(), key=lambda item: item[1][1])
            self._counts = dict(oldest_first[len(oldest_first) // 2 :])

    async def aclose(self) -> None:
        self._counts.clear()


class RedisLimiter:
    """The same rule on one Redis counter per address (``SET NX PX`` + ``INCR``, atomic)."""

    def __init__(self, redis: Redis, settings: LoginRateLimitSettings, prefix: str) -> None:
        self._redis = redis
        self._max = settings.max_failures
        self._window_ms = int(settings.window_seconds * 1000)
        self._prefix = f"{prefix}:auth:login:"

    async def attempt(self, client: str) -> None:
        key = self._prefix + client
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(key, 0, px=self._window_ms, nx=True)
            pipe.incr(key)
            pipe.pttl(key)
            _, count, ttl_ms = await pipe.execute()
        if int(count) > self._max:
            raise TooManyAttempts(max(1, math.ceil(int(ttl_ms) / 1000)))

    async def succeeded(self, client: str) -> None:
        await self._redis.delete(self._prefix + client)

    async def aclose(self) -> None:
        await self._redis.aclose()


def client_address(
    peer: str | None,
    real_ip: str | None,
    trusted: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network],
) -> str:
    """The client's address for the limit: the TCP peer, or the ``X-Real-IP`` a trusted proxy
    set. Other forwarding headers are ignored: the client writes those itself."""
    if peer and real_ip and trusted:
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return peer
        if any(address in net for net in trusted):
            return real_ip.strip()
    return peer or "unknown"
