"""A short-lived memory of verified credentials, so a busy client does not cost a database
query per request, while a revocation (sign-out, password change, revoked key, disabled
account) reaches every worker within ``auth.revocation_seconds``: no entry outlives it."""

from __future__ import annotations

import time
from collections.abc import Hashable

from fawn.gateway.auth.principal import Principal

MAX_ENTRIES = 10_000


class PrincipalCache:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._entries: dict[Hashable, tuple[float, Principal]] = {}

    def get(self, key: Hashable) -> Principal | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, principal = entry
        if expires <= time.monotonic():
            del self._entries[key]
            return None
        return principal

    def put(self, key: Hashable, principal: Principal) -> None:
        if self._ttl <= 0:
            return
        if len(self._entries) >= MAX_ENTRIES:
            now = time.monotonic()
            self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
        self._entries[key] = (time.monotonic() + self._ttl, principal)

    def forget_user(self, user_id: str) -> None:
        """Drop this worker's entries for a user at once (other workers' expire on their own)."""
        self._entries = {k: v for k, v in self._entries.items() if v[1].user_id != user_id}
