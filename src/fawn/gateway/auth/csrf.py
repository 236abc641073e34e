"""Cross-site request forgery: the double-submit token, and the Origin check on sign-in.

A browser sends the session cookie with any request to this origin, even one a hostile page
started. Such a page can neither read our ``csrf_token`` cookie nor set a custom header on a
cross-site request without a CORS preflight we refuse, so a state-changing request that
authenticates with the cookie must repeat the cookie's value in ``X-CSRF-Token``. Requests
authenticated by ``Authorization`` or ``x-api-key`` carry no ambient credential and are not
checked.

Sign-in routes run before the page has a token; they refuse a foreign ``Origin`` instead (a
hostile page must not sign a victim into the attacker's account).
"""

from __future__ import annotations

import hmac
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

from fawn.gateway.auth.cookies import CSRF_COOKIE, CSRF_HEADER
from fawn.gateway.auth.errors import CsrfFailed

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def check_double_submit(headers: Mapping[str, str], cookies: Mapping[str, str]) -> None:
    cookie = cookies.get(CSRF_COOKIE)
    header = headers.get(CSRF_HEADER)
    if not cookie or not header:
        raise CsrfFailed(
            "CSRF token missing: a request signed in with the session cookie must send the "
            "csrf_token cookie's value in the X-CSRF-Token header"
        )
    if not hmac.compare_digest(cookie.encode(), header.encode()):
        raise CsrfFailed("CSRF token mismatch: X-CSRF-Token differs from the csrf_token cookie")


def _origin(url: str, *, exact: bool) -> str | None:
    """``scheme://host[:port]`` normalised; with ``exact``, None for anything a browser
    would never send as an Origin (a path, credentials, a query)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if exact and (parts.path or parts.query or parts.fragment or parts.username):
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname.lower()
    host = f"[{host}]" if ":" in host else host
    suffix = "" if port in (None, default) else f":{port}"
    return f"{parts.scheme}://{host}{suffix}"


def check_origin(origin: str | None, own: Collection[str], allowed: Collection[str]) -> None:
    """Refuse a browser request whose ``Origin`` is neither this server (``own``: the
    origins the request was addressed to) nor an allowed origin (``server.cors_origins``).
    Requests without ``Origin`` (programs) pass."""
    if origin is None:
        return
    seen = _origin(origin, exact=True)
    if seen is not None and seen in {_origin(o, exact=False) for o in (*own, *allowed)}:
        return
    raise CsrfFailed(f"cross-site sign-in refused: origin {origin!r} is not allowed")
