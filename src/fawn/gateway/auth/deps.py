"""Route dependencies: the request's principal (decided by the middleware) and its Caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.errors import NotAuthenticated
from fawn.gateway.auth.principal import Principal
from fawn.gateway.auth.service import AuthService


def _auth(request: Request) -> AuthService:
    auth: AuthService = request.app.state.services.auth
    return auth


def _principal(request: Request) -> Principal:
    principal: Principal = request.state.principal
    return principal


def _caller(request: Request) -> Caller:
    principal = _principal(request)
    if not principal.authenticated:
        raise NotAuthenticated()
    return Caller(principal=principal, custom=_auth(request).custom)


AuthDep = Annotated[AuthService, Depends(_auth)]
PrincipalDep = Annotated[Principal, Depends(_principal)]
CallerDep = Annotated[Caller, Depends(_caller)]
