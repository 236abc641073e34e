"""Cross-site request refusal (CSRF) for the requests a browser sends without asking first.

A page on any site can make the browser send a POST/PUT/PATCH/DELETE whose body is a form
(``multipart/form-data``, ``application/x-www-form-urlencoded``), ``text/plain`` or nothing at
all, with no CORS preflight: the browser only hides the answer, the request itself is made.
Every other state-changing request (``application/json``) is preflighted, and the CORS
middleware approves only ``server.cors_origins``.

So those "simple" requests are refused (403) when they come from a page of another origin:
their ``Origin`` (or, when a browser omits it, the origin of the ``Referer``) must be this
server's own origin (the page fawn serves) or one of ``server.cors_origins``. A request with
neither header did not come from a web page (SDKs, curl) and goes through. This is
independent of any session cookie and its token.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from fawn.gateway.edge.body import media_type
from fawn.gateway.edge.errors import CrossSiteRequest
from fawn.gateway.edge.hosts import host_name
from fawn.gateway.errors import error_response

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Content types a cross-site page can send without a preflight (None: no body type at all).
SIMPLE_MEDIA_TYPES = frozenset(
    {None, "multipart/form-data", "application/x-www-form-urlencoded", "text/plain"}
)
_DEFAULT_PORTS = {"http": 80, "https": 443}

#: ``(scheme, host, port)``
Origin = tuple[str, str, int | None]


def parse_origin(text: str) -> Origin | None:
    """``("https", "app.example", 443)`` for ``https://App.example`` or a URL on it."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS.get(scheme)


class CrossSiteGuard:
    """Pure ASGI: 403 for a simple state-changing request from another site's page."""

    def __init__(self, app: ASGIApp, *, allowed_origins: Iterable[str]) -> None:
        self.app = app
        origins = list(allowed_origins)
        self.allow_any = "*" in origins
        self.allowed = frozenset(o for o in map(parse_origin, origins) if o is not None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            headers = Headers(scope=scope)
            if media_type(headers) in SIMPLE_MEDIA_TYPES:
                refusal = self._refusal(headers)
                if refusal is not None:
                    await error_response(CrossSiteRequest(refusal))(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> str | None:
        """Why the request is refused; None when it may go on."""
        sent = headers.get("origin")
        header = "Origin"
        if sent is None:
            sent, header = headers.get("referer"), "Referer"
        if sent is None or self.allow_any:
            return None
        origin = parse_origin(sent)
        if origin is not None and (origin in self.allowed or _same_origin(origin, headers)):
            return None
        shown = sent[:100]
        return (
            f"cross-site request refused: {header} {shown!r} is neither this server nor one "
            "of server.cors_origins (forms, text/plain and body-less requests from other "
            "sites' pages are not accepted)"
        )


def _same_origin(origin: Origin, headers: Headers) -> bool:
    """Whether ``origin`` names this server as the request reached it (its ``Host``) or as a
    proxy in front says the browser addressed it (``X-Forwarded-Host``, as a Next.js rewrite
    sends it: DeerFlow's web app signs in through one). The forwarded header is not one a page
    can set on a request without a preflight, so trusting it opens nothing."""
    forwarded = headers.get("x-forwarded-host", "").split(",")[0].strip()
    if forwarded:
        proto = (headers.get("x-forwarded-proto") or origin[0]).split(",")[0].strip()
        if _host_matches(origin, forwarded, proto):
            return True
    host = headers.get("host")
    return host is not None and _host_matches(origin, host, origin[0])


def _host_matches(origin: Origin, host: str, host_scheme: str) -> bool:
    """Whether ``origin`` is ``host_scheme://host``."""
    scheme, name, port = origin
    if scheme != host_scheme.lower():
        return False
    _, _, tail = host.rpartition("]") if host.startswith("[") else ("", "", host)
    _, sep, host_port = tail.rpartition(":")
    own_port = int(host_port) if sep and host_port.isdigit() else _DEFAULT_PORTS.get(scheme)
    return host_name(host) == name and own_port == port
