"""The browser's cookies: the session (``access_token``, HttpOnly) and the CSRF token
(``csrf_token``, readable by the page, echoed in ``X-CSRF-Token``). Names as DeerFlow's web
app expects them."""

from __future__ import annotations

import secrets
from typing import Literal

from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE = "access_token"
CSRF_COOKIE = "csrf_token"
CSRF_HEADER = "x-csrf-token"

CookieSecure = Literal["auto", "always", "never"]


def is_secure(request: Request, policy: CookieSecure) -> bool:
    """``Secure`` cookies when served over https (as the server saw it: a trusted proxy's
    ``X-Forwarded-Proto`` counts), or as the operator decided."""
    if policy == "auto":
        return request.url.scheme == "https"
    return policy == "always"


def set_session(
    response: Response,
    request: Request,
    token: str,
    *,
    max_age: int | None,
    policy: CookieSecure,
) -> None:
    """Set the session and a fresh CSRF token; ``max_age=None`` makes both end with the
    browser session ("remember me" off)."""
    secure = is_secure(request, policy)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=max_age,
        httponly=True,
        secure=secure,
        samesite="lax",
        path="/",
    )
    set_csrf(response, secure=secure, max_age=max_age)


def set_csrf(response: Response, *, secure: bool, max_age: int | None) -> None:
    response.set_cookie(
        CSRF_COOKIE,
        secrets.token_urlsafe(32),
        max_age=max_age,
        httponly=False,
        secure=secure,
        samesite="strict",
        path="/",
    )


def clear_session(response: Response, request: Request, policy: CookieSecure) -> None:
    secure = is_secure(request, policy)
    response.delete_cookie(SESSION_COOKIE, path="/", secure=secure, httponly=True, samesite="lax")
    response.delete_cookie(CSRF_COOKIE, path="/", secure=secure, samesite="strict")
