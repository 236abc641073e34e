"""The ``Host`` allowlist: a defence against DNS rebinding.

A web page on ``evil.example`` can make its own name resolve to 127.0.0.1 and then talk to a
server on the victim's loopback as if it were same-origin; its requests still carry
``Host: evil.example``. So only requests naming this server are served: the loopback names
(``localhost``, ``127.0.0.1``, ``[::1]``), the configured ``server.host``, and the names in
``server.allowed_hosts`` (``*.example.com`` matches subdomains, ``*`` anything), on any port.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from fawn.gateway.edge.errors import HostNotAllowed
from fawn.gateway.errors import error_response

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
#: Bind-everything addresses are not names a client uses.
_WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})


def host_name(authority: str) -> str:
    """``example.com`` for ``Example.COM:8080``, ``::1`` for ``[::1]:2026`` (or ``::1``)."""
    text = authority.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    if text.count(":") > 1:  # a bare IPv6 address, as written in server.host
        return text
    name, sep, port = text.rpartition(":")
    return name if sep and port.isdigit() else text


class HostAllowlist:
    """Pure ASGI: 400 for a request whose ``Host`` is not one of this server's names."""

    def __init__(self, app: ASGIApp, *, bind_host: str, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        names = {*LOOPBACK_NAMES, *(host_name(h) for h in allowed_hosts)}
        if bind_host not in _WILDCARD_BINDS:
            names.add(host_name(bind_host))
        self.allow_any = "*" in names
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))
        self.names = frozenset(n for n in names if not n.startswith("*"))

    def allowed(self, authority: str) -> bool:
        if self.allow_any:
            return True
        name = host_name(authority)
        return name in self.names or (bool(name) and name.endswith(self.suffixes))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = Headers(scope=scope).get("host")
            if host is None or not self.allowed(host):
                shown = "no Host header" if host is None else f"Host {host[:100]!r}"
                exc = HostNotAllowed(
                    f"{shown} is not a name of this server; "
                    "add the name to server.allowed_hosts to serve it"
                )
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)
