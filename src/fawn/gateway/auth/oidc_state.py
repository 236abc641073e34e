"""The sign-in in flight: state, nonce and PKCE verifier in a signed, short-lived cookie
scoped to the callback path, so any worker can finish a sign-in another one started."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt

from fawn.gateway.auth.oidc import Flow

_TYPE = "fawn-oidc-state"
CALLBACK_PREFIX = "/api/v1/auth/callback/"


@dataclass(frozen=True, kw_only=True)
class PendingSignIn:
    provider: str
    flow: Flow
    next_path: str
    remember: bool


def cookie_name(provider: str) -> str:
    return f"fawn_oidc_{provider}"


def state_key(secret: str) -> bytes:
    """A key of its own (derived from the server secret): a state cookie is never a session."""
    return hmac.new(secret.encode(), b"fawn oidc state", hashlib.sha256).digest()


def seal(pending: PendingSignIn, key: bytes, ttl_seconds: float) -> str:
    payload = {
        "typ": _TYPE,
        "provider": pending.provider,
        "state": pending.flow.state,
        "nonce": pending.flow.nonce,
        "verifier": pending.flow.verifier,
        "next": pending.next_path,
        "remember": pending.remember,
        "exp": datetime.now(UTC) + timedelta(seconds=ttl_seconds),
    }
    return jwt.encode(payload, key, algorithm="HS256")


def unseal(token: str, key: bytes) -> PendingSignIn | None:
    try:
        payload = jwt.decode(token, key, algorithms=["HS256"], options={"require": ["exp"]})
    except jwt.PyJWTError:
        return None
    if payload.get("typ") != _TYPE:
        return None
    try:
        return PendingSignIn(
            provider=str(payload["provider"]),
            flow=Flow(
                state=str(payload["state"]),
                nonce=str(payload["nonce"]),
                verifier=str(payload["verifier"]),
            ),
            next_path=safe_next(payload.get("next")),
            remember=bool(payload.get("remember", True)),
        )
    except KeyError:
        return None


def safe_next(candidate: object, default: str = "/") -> str:
    """A path on this site to return to: never another site (``//evil``, ``https:``, ``\\``)."""
    if not isinstance(candidate, str) or not candidate.startswith("/"):
        return default
    if candidate.startswith("//") or "\\" in candidate or ":" in candidate.split("?", 1)[0]:
        return default
    if any(ord(c) < 0x20 for c in candidate) or len(candidate) > 2048:
        return default
    return candidate
