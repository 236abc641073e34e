"""The ASGI application: routers, error mapping, and the lifespan that owns every service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from fawn.config.settings import AppConfig
from fawn.gateway.auth import key_routes, oidc_routes
from fawn.gateway.auth import routes as auth_routes
from fawn.gateway.auth.exposure import exposure_problem
from fawn.gateway.edge import edge_middleware
from fawn.gateway.errors import install_error_handlers
from fawn.gateway.openapi import LANGGRAPH_UNDER_API, install_openapi
from fawn.gateway.routers import (
    assistants,
    deerflow_app,
    files,
    models,
    run_events,
    runs,
    system,
    thread_protocol,
    thread_stream,
    threads,
    unsupported,
    web,
)
from fawn.gateway.services import open_services


class UnsafeExposure(Exception):
    """The configuration would serve every thread, without authentication, beyond loopback."""


def create_app(config: AppConfig) -> FastAPI:
    problem = exposure_problem(config)
    if problem is not None:
        raise UnsafeExposure(problem)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_services(config) as services:
            app.state.services = services
            yield

    app = FastAPI(
        title="fawn",
        summary="Self-hosted agent runtime, wire-compatible with the LangGraph Agent Server API",
        version="0.1.0",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    install_openapi(app)
    for module in (system, auth_routes, key_routes, oidc_routes):
        app.include_router(module.router)
    for module in (assistants, threads, thread_stream, thread_protocol, runs):
        app.include_router(module.router)
    app.include_router(files.router)
    app.include_router(deerflow_app.router)
    # DeerFlow's gateway serves the LangGraph API under /api as well, and DeerFlow's web app
    # reaches it there through its own proxy (same origin, so its session cookie goes along):
    # the same operations once more under LANGGRAPH_UNDER_API, left out of the document (the
    # edge checks their bodies as the operations they mirror)
    for module in (assistants, threads, thread_stream, thread_protocol, runs):
        app.include_router(module.router, prefix=LANGGRAPH_UNDER_API, include_in_schema=False)
    app.include_router(models.router)
    app.include_router(run_events.router)
    app.include_router(unsupported.router)
    app.include_router(web.router)
    # The edge's order is this list's (outermost first), not the order of add_middleware calls;
    # identity is resolved inside it (see fawn.gateway.edge).
    app.user_middleware = edge_middleware(config.server, app.openapi)
    return app
