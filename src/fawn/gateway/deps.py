"""Dependencies: the lifespan-owned services, reached through the request's app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

if TYPE_CHECKING:
    from fawn.gateway.services import Services


def _services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated["Services", Depends(_services)]
