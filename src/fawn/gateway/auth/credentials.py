"""What a request presents to prove who it is, read from its ASGI headers."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import cookie_parser

from fawn.gateway.auth.cookies import SESSION_COOKIE


@dataclass(frozen=True, kw_only=True)
class Credentials:
    #: ``Authorization: Bearer <token>`` or ``x-api-key: <token>`` (an API key, or a
    #: session token a program kept)
    bearer: str | None = None
    #: the ``access_token`` cookie a browser sends by itself
    cookie: str | None = None


def headers_of(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names lowercased; a repeated header keeps its first value."""
    headers: dict[str, str] = {}
    for name, value in raw:
        headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return headers


def cookies_of(headers: dict[str, str]) -> dict[str, str]:
    header = headers.get("cookie")
    return cookie_parser(header) if header else {}


def credentials_of(headers: dict[str, str], cookies: dict[str, str]) -> Credentials:
    bearer = None
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        bearer = value.strip()
    elif headers.get("x-api-key", "").strip():
        bearer = headers["x-api-key"].strip()
    return Credentials(bearer=bearer, cookie=cookies.get(SESSION_COOKIE) or None)
