"""IdentityMiddleware: the one place a request's caller is decided (pure ASGI, so streaming
responses and disconnects pass through untouched).

The principal goes into ``scope["state"]["principal"]`` (``request.state.principal``) and
travels down as a value; nothing below reads credentials, cookies or client metadata to learn
who is calling. Requests outside the public paths without a valid credential end here with
401; a state-changing request proven by the session cookie must carry the CSRF token.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from fawn.gateway.auth.credentials import cookies_of, credentials_of, headers_of
from fawn.gateway.auth.csrf import UNSAFE_METHODS, check_double_submit, check_origin
from fawn.gateway.auth.errors import AuthError, NotAuthenticated
from fawn.gateway.auth.langgraph_auth import BodyTee
from fawn.gateway.auth.paths import SIGN_IN_PATHS, is_public
from fawn.gateway.auth.principal import ANONYMOUS, SINGLE_USER, Principal
from fawn.gateway.auth.service import AuthService
from fawn.gateway.errors import error_response


def own_origins(scope: Scope, headers: dict[str, str]) -> list[str]:
    """The origins this request was addressed to: the Host it reached, and the one a proxy in
    front says the browser used (``X-Forwarded-Host``, as Next.js rewrites send it). Trusting
    the forwarded header here is safe: a hostile page cannot set it on a cross-site request
    without a preflight, and a program that can forge it can forge ``Origin`` anyway."""
    scheme = scope.get("scheme", "http")
    origins = [f"{scheme}://{headers.get('host') or 'localhost'}"]
    forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip()
    if forwarded:
        proto = (headers.get("x-forwarded-proto") or scheme).split(",")[0].strip() or scheme
        port = headers.get("x-forwarded-port", "").split(",")[0].strip()
        if port and ":" not in forwarded.rsplit("]", 1)[-1]:
            forwarded = f"{forwarded}:{port}"
        origins.append(f"{proto}://{forwarded}")
    return origins


class IdentityMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        auth: AuthService = scope["app"].state.services.auth
        tee = BodyTee(receive)
        try:
            principal = await self._resolve(auth, scope, tee)
        except AuthError as exc:
            await error_response(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, tee.reader() if auth.custom is not None else receive, send)

    async def _resolve(self, auth: AuthService, scope: Scope, tee: BodyTee) -> Principal:
        if auth.mode == "none":
            return SINGLE_USER
        public = is_public(scope["path"])
        if auth.custom is not None:
            return ANONYMOUS if public else await auth.custom.authenticate(scope, tee)
        return await self._account(auth, scope, public)

    async def _account(self, auth: AuthService, scope: Scope, public: bool) -> Principal:
        assert auth.identity is not None
        headers = headers_of(scope.get("headers", []))
        cookies = cookies_of(headers)
        unsafe = scope["method"] in UNSAFE_METHODS
        if unsafe and scope["path"] in SIGN_IN_PATHS:
            check_origin(headers.get("origin"), own_origins(scope, headers), auth.allowed_origins)
        try:
            resolved = await auth.identity.resolve(credentials_of(headers, cookies))
        except AuthError:
            if public:  # a stale cookie must not keep anyone from signing in again
                return ANONYMOUS
            raise
        if resolved is None:
            if public:
                return ANONYMOUS
            raise NotAuthenticated()
        principal, by_cookie = resolved
        if by_cookie and unsafe and scope["path"] not in SIGN_IN_PATHS:
            check_double_submit(headers, cookies)
        return principal
