"""``/api/v1/auth/*``: the routes DeerFlow's web app signs in with (same paths and shapes),
and OpenID Connect sign-in."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request, Response
from pydantic import BaseModel, ConfigDict

from fawn.gateway.auth.cookies import clear_session, is_secure, set_csrf, set_session
from fawn.gateway.auth.deps import AuthDep, PrincipalDep
from fawn.gateway.auth.errors import AuthUnavailable, NotAuthenticated
from fawn.gateway.auth.principal import Principal
from fawn.gateway.auth.ratelimit import client_address
from fawn.gateway.auth.service import AuthService
from fawn.gateway.responses import JSON
from fawn.store.users import UserRecord

router = APIRouter(prefix="/api/v1/auth", tags=["auth"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Credentials(_Body):
    email: str
    password: str
    remember_me: bool = True


class PasswordChange(_Body):
    current_password: str
    new_password: str
    new_email: str | None = None
    remember_me: bool | None = None


def user_json(user: UserRecord | Principal) -> dict[str, Any]:
    """DeerFlow's ``UserResponse``."""
    if isinstance(user, UserRecord):
        return {
            "id": user.user_id,
            "email": user.email,
            "system_role": user.role,
            "needs_setup": user.needs_setup,
            "oauth_provider": user.oauth_provider,
        }
    return {
        "id": user.user_id,
        "email": user.email or f"{user.user_id}@fawn.local",
        "system_role": user.role,
        "needs_setup": user.needs_setup,
        "oauth_provider": user.oauth_provider,
    }


def require_accounts(auth: AuthService) -> None:
    if not auth.accounts_on:
        raise AuthUnavailable(
            f"this server runs with auth.mode {auth.mode}: it keeps no accounts "
            "(set auth.mode to local or oidc)"
        )


async def _signed_in(
    auth: AuthService, request: Request, user: UserRecord, remember: bool, body: Any, status: int
) -> Response:
    session = await auth.accounts.open_session(user, remember=remember)
    response = JSON(body, status_code=status)
    set_session(
        response,
        request,
        session.token,
        max_age=session.cookie_max_age,
        policy=auth.settings.cookie_secure,
    )
    return response


@router.get("/setup-status")
async def setup_status(auth: AuthDep) -> Response:
    """``needs_setup``: no admin exists yet (``initialize`` creates it)."""
    if not auth.accounts_on:
        return JSON({"needs_setup": False, "registration_enabled": False})
    admins = await auth.accounts.users.count_admins()
    return JSON(
        {"needs_setup": admins == 0, "registration_enabled": auth.settings.registration_open}
    )


@router.post("/initialize", status_code=201)
async def initialize(body: Credentials, request: Request, auth: AuthDep) -> Response:
    """Create the first admin (409 once one exists) and sign it in."""
    require_accounts(auth)
    admin = await auth.accounts.initialize(body.email, body.password)
    return await _signed_in(auth, request, admin, body.remember_me, user_json(admin), 201)


@router.post("/register", status_code=201)
async def register(body: Credentials, request: Request, auth: AuthDep) -> Response:
    require_accounts(auth)
    user = await auth.accounts.register(body.email, body.password)
    return await _signed_in(auth, request, user, body.remember_me, user_json(user), 201)


@router.post("/login/local")
async def login_local(
    request: Request,
    auth: AuthDep,
    username: Annotated[str, Form(min_length=1, description="the account's email")],
    password: Annotated[str, Form(min_length=1)],
    remember_me: Annotated[bool, Form()] = True,
) -> Response:
    """Sign in with email (``username``) and password, as an HTML form posts them. The token
    is only in the HttpOnly cookie, never in the body."""
    require_accounts(auth)
    client = client_address(
        request.client.host if request.client else None,
        request.headers.get("x-real-ip"),
        auth.trusted_proxies,
    )
    user = await auth.accounts.sign_in(username, password, client)
    seconds = int(auth.settings.session_days * 86_400)
    body = {"expires_in": seconds, "needs_setup": user.needs_setup}
    return await _signed_in(auth, request, user, remember_me, body, 200)


@router.post("/logout")
async def logout(request: Request, auth: AuthDep, principal: PrincipalDep) -> Response:
    """End this session everywhere (not only in this browser) and clear the cookies."""
    if auth.accounts_on and principal.method == "session":
        await auth.accounts.close_session(principal)
    response = JSON({"message": "Successfully logged out"})
    clear_session(response, request, auth.settings.cookie_secure)
    return response


@router.get("/me")
async def me(request: Request, auth: AuthDep, principal: PrincipalDep) -> Response:
    if not principal.authenticated:
        raise NotAuthenticated()
    response = JSON(user_json(principal))
    if principal.method == "session" and "csrf_token" not in request.cookies:
        # a browser that lost its CSRF cookie gets a new one instead of a dead session
        set_csrf(response, secure=is_secure(request, auth.settings.cookie_secure), max_age=None)
    return response


@router.post("/change-password")
async def change_password(
    body: PasswordChange, request: Request, auth: AuthDep, principal: PrincipalDep
) -> Response:
    """New password (and optionally email). Every session and token issued before stops
    working; this browser gets a new session."""
    require_accounts(auth)
    if principal.method not in ("session", "api_key"):
        raise NotAuthenticated()
    user = await auth.accounts.change_password(
        principal, body.current_password, body.new_password, body.new_email
    )
    remember = True if body.remember_me is None else body.remember_me
    return await _signed_in(
        auth, request, user, remember, {"message": "Password changed successfully"}, 200
    )


@router.get("/providers")
async def providers(auth: AuthDep) -> Response:
    """The identity providers to offer on a sign-in page (names only, no secrets)."""
    return JSON(
        {
            "providers": [
                {"id": p.id, "display_name": p.display_name, "type": "oidc"}
                for p in auth.providers.values()
            ]
        }
    )
