"""The HTTP edge: what every request passes before routing, in this order.

1. :class:`~fawn.gateway.edge.hosts.HostAllowlist`: the ``Host`` names this server (DNS
   rebinding).
2. CORS (when ``server.cors_origins`` is set): preflights answered for those origins only;
   the layers below answer with CORS headers, so a permitted page can read their errors.
3. :class:`~fawn.gateway.edge.origin.CrossSiteGuard`: simple state-changing requests from
   another site's page are refused (CSRF).
4. :class:`~fawn.gateway.edge.body.RequestBodyGuard`: a body is JSON (or multipart on the
   upload routes, a form on sign-in), within ``server.max_body_bytes``, and storable.
5. :class:`~fawn.gateway.auth.middleware.IdentityMiddleware`: who is calling (401 without a
   credential where one is needed; the CSRF token of a cookie session).

All five are pure ASGI (no ``BaseHTTPMiddleware``: SSE disconnects stay visible), and each
refusal is an error body from the one status table, before any service is touched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from fawn.config.settings import ServerSettings
from fawn.gateway.auth.middleware import IdentityMiddleware
from fawn.gateway.edge.body import BodyKind, BodyKinds, RequestBodyGuard
from fawn.gateway.edge.hosts import HostAllowlist
from fawn.gateway.edge.origin import CrossSiteGuard
from fawn.gateway.openapi import LANGGRAPH_UNDER_API, Operation, operations

#: Response headers a browser page may read (pagination and run locations).
EXPOSED_HEADERS = ["Content-Location", "Location", "X-Pagination-Total", "X-Pagination-Next"]


def edge_middleware(
    server: ServerSettings, openapi: Callable[[], dict[str, Any]]
) -> list[Middleware]:
    """The edge layers for ``server``'s settings, outermost first; ``openapi`` gives the
    application's OpenAPI document."""
    layers = [
        Middleware(
            HostAllowlist,
            bind_host=server.host,
            allowed_hosts=server.allowed_hosts,
        )
    ]
    if server.cors_origins:
        layers.append(
            Middleware(
                CORSMiddleware,
                allow_origins=server.cors_origins,
                allow_methods=["*"],
                allow_headers=["*"],
                expose_headers=EXPOSED_HEADERS,
            )
        )
    layers += [
        Middleware(CrossSiteGuard, allowed_origins=server.cors_origins),
        Middleware(
            RequestBodyGuard,
            max_body_bytes=server.max_body_bytes,
            max_json_depth=server.max_json_depth,
            body_kinds=body_kinds(openapi),
        ),
        Middleware(IdentityMiddleware),
    ]
    return layers


def body_kinds(openapi: Callable[[], dict[str, Any]]) -> BodyKinds:
    """What body each operation of the OpenAPI document takes (read once, on first use), so
    the edge lets through exactly what the API declares."""

    @functools.cache
    def declared() -> list[Operation]:
        return operations(openapi())

    def kind(method: str, path: str) -> BodyKind | None:
        found = [op for op in declared() if op.method == method and op.pattern.match(path)]
        if not found and path.startswith(f"{LANGGRAPH_UNDER_API}/"):  # the mirrored operations
            mirrored = path.removeprefix(LANGGRAPH_UNDER_API)
            found = [op for op in declared() if op.method == method and op.pattern.match(mirrored)]
        if not found:
            return None
        if any(op.multipart for op in found):
            return "multipart"
        return "form" if any(op.form for op in found) else "json"

    return kind
