"""API keys: ``fk_<id>_<secret>``, shown once; the database keeps the id and SHA-256(secret).

A fast hash is the right one here: the secret is 256 random bits, so there is nothing to guess
and nothing for a slow hash to protect, while a slow hash would be paid on every request that
misses the cache. The id part lets the lookup be one indexed row, compared in constant time.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

PREFIX = "fk_"
_KEY = re.compile(r"fk_([A-Za-z0-9]{16})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True, kw_only=True)
class ApiKeySecret:
    key_id: str
    secret: str

    @property
    def token(self) -> str:
        """What the caller sends (``Authorization: Bearer`` or ``x-api-key``)."""
        return f"{PREFIX}{self.key_id}_{self.secret}"


def new_key() -> ApiKeySecret:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    key_id = "".join(secrets.choice(alphabet) for _ in range(16))
    return ApiKeySecret(key_id=key_id, secret=secrets.token_urlsafe(32))


def parse_key(token: str) -> ApiKeySecret | None:
    match = _KEY.fullmatch(token)
    if match is None:
        return None
    return ApiKeySecret(key_id=match.group(1), secret=match.group(2))


def looks_like_key(token: str) -> bool:
    return token.startswith(PREFIX)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
