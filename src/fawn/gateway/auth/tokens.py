"""Session tokens: a JWT (HS256) naming the user, the session and the token version.

The signature lets the edge turn away forged or damaged tokens without touching the database;
the session row and the version decide whether a well-formed token is still good (signed out,
password changed, account disabled: see :mod:`fawn.gateway.auth.identity`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jwt

from fawn.gateway.auth.errors import InvalidToken, TokenExpired

_ALGORITHM = "HS256"
_TYPE = "fawn-session"
SECRET_FILE = "auth_secret"


@dataclass(frozen=True, kw_only=True)
class SessionClaims:
    user_id: str
    session_id: str
    token_version: int
    expires_at: datetime


class TokenCodec:
    def __init__(self, secret: str) -> None:
        self._key = secret.encode()

    def encode(self, claims: SessionClaims) -> str:
        payload = {
            "sub": claims.user_id,
            "sid": claims.session_id,
            "ver": claims.token_version,
            "typ": _TYPE,
            "exp": claims.expires_at,
            "iat": datetime.now(UTC),
        }
        return jwt.encode(payload, self._key, algorithm=_ALGORITHM)

    def decode(self, token: str) -> SessionClaims:
        try:
            payload = jwt.decode(
                token,
                self._key,
                algorithms=[_ALGORITHM],
                options={"require": ["sub", "sid", "ver", "exp", "typ"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenExpired() from None
        except jwt.PyJWTError:
            raise InvalidToken("the session token is not valid: sign in again") from None
        ver, sub, sid = payload["ver"], payload["sub"], payload["sid"]
        if (
            payload["typ"] != _TYPE
            or not isinstance(ver, int)
            or not (isinstance(sub, str) and isinstance(sid, str))
        ):
            raise InvalidToken("the session token is not valid: sign in again")
        return SessionClaims(
            user_id=sub,
            session_id=sid,
            token_version=ver,
            expires_at=datetime.fromtimestamp(payload["exp"], UTC),
        )


def load_or_create_secret(configured: str | None, data_dir: Path) -> str:
    """``auth.secret``, else the one kept in ``<data_dir>/auth_secret`` (created on first use,
    readable only by the server's user). Every worker sharing the data directory shares it.
    Blocking: called once at start."""
    if configured:
        return configured
    path = data_dir / SECRET_FILE
    with contextlib.suppress(FileNotFoundError):
        existing = path.read_text(encoding="ascii").strip()
        if len(existing) >= 32:
            return existing
    secret = secrets.token_urlsafe(48)
    temporary = path.with_name(f".{SECRET_FILE}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(secret)
    try:
        # link, not rename: when two workers start at once, the first secret wins for both
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)
    return path.read_text(encoding="ascii").strip()
