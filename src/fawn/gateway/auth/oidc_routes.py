"""OpenID Connect sign-in: ``GET /api/v1/auth/oauth/{provider}`` sends the browser to the
provider; ``GET /api/v1/auth/callback/{provider}`` finishes the sign-in and opens a session."""

from __future__ import annotations

import hmac
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Request, Response
from starlette.responses import RedirectResponse

from fawn.gateway.auth.cookies import is_secure, set_session
from fawn.gateway.auth.deps import AuthDep
from fawn.gateway.auth.errors import AuthError, AuthUnavailable, Forbidden, SignInFailed
from fawn.gateway.auth.oidc import Flow, OIDCProvider
from fawn.gateway.auth.oidc_state import (
    CALLBACK_PREFIX,
    PendingSignIn,
    cookie_name,
    safe_next,
    seal,
    unseal,
)
from fawn.gateway.auth.service import AuthService
from fawn.gateway.errors import code_for, error_response

router = APIRouter(prefix="/api/v1/auth", tags=["auth"])


def _provider(auth: AuthService, provider: str) -> OIDCProvider:
    found = auth.providers.get(provider)
    if found is None:
        if not auth.providers:
            raise AuthUnavailable("no identity provider is configured (auth.oidc.providers)")
        raise AuthUnavailable(f"unknown identity provider {provider!r}")
    return found


def _redirect_uri(request: Request, provider: OIDCProvider) -> str:
    if provider.settings.redirect_uri:
        return provider.settings.redirect_uri
    return str(request.base_url).rstrip("/") + CALLBACK_PREFIX + provider.id


@router.get("/oauth/{provider}")
async def start(
    provider: str,
    request: Request,
    auth: AuthDep,
    next: str | None = None,
    remember_me: bool = True,
) -> Response:
    """Redirect to the provider's authorization endpoint (state, nonce and PKCE challenge)."""
    chosen = _provider(auth, provider)
    flow = Flow.new()
    url = await chosen.authorization_url(flow, _redirect_uri(request, chosen))
    pending = PendingSignIn(
        provider=chosen.id, flow=flow, next_path=safe_next(next), remember=remember_me
    )
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(
        cookie_name(chosen.id),
        seal(pending, auth.state_key, auth.settings.oidc.state_seconds),
        max_age=int(auth.settings.oidc.state_seconds),
        path=CALLBACK_PREFIX + chosen.id,
        httponly=True,
        secure=is_secure(request, auth.settings.cookie_secure),
        samesite="lax",
    )
    return response


@router.get("/callback/{provider}")
async def callback(
    provider: str,
    request: Request,
    auth: AuthDep,
    code: str | None = None,
    state: str | None = None,
    error: str | None = None,
    error_description: str | None = None,
) -> Response:
    """Verify the state, exchange the code, verify the ID token, find or create the account,
    open a session, and send the browser on (``auth.oidc.frontend_callback`` or ``next``)."""
    chosen = _provider(auth, provider)
    try:
        pending = _pending(request, auth, chosen, state)
        if error:
            raise SignInFailed(f"{chosen.id} refused the sign-in: {error_description or error}")
        if not code:
            raise SignInFailed("the provider's answer has no code")
        identity = await chosen.sign_in(code, pending.flow, _redirect_uri(request, chosen))
        user = await auth.accounts.oidc_user(chosen.id, chosen.settings, identity)
    except AuthError as exc:
        return _failed(auth, request, chosen, exc)
    session = await auth.accounts.open_session(user, remember=pending.remember)
    response = RedirectResponse(_after(auth, pending.next_path), status_code=302)
    set_session(
        response,
        request,
        session.token,
        max_age=session.cookie_max_age,
        policy=auth.settings.cookie_secure,
    )
    _forget_state(response, request, auth, chosen)
    return response


def _pending(
    request: Request, auth: AuthService, provider: OIDCProvider, state: str | None
) -> PendingSignIn:
    sealed = request.cookies.get(cookie_name(provider.id))
    pending = unseal(sealed, auth.state_key) if sealed else None
    if pending is None or pending.provider != provider.id:
        raise Forbidden("no sign-in in progress (the state cookie is missing or expired)")
    if state is None or not hmac.compare_digest(state.encode(), pending.flow.state.encode()):
        raise Forbidden("the state does not match this browser's sign-in")
    return pending


def _after(auth: AuthService, next_path: str) -> str:
    front = auth.settings.oidc.frontend_callback
    return f"{front}?next={quote(next_path, safe='/')}" if front else next_path


def _failed(
    auth: AuthService, request: Request, provider: OIDCProvider, exc: AuthError
) -> Response:
    front = auth.settings.oidc.frontend_callback
    if front:
        # DeerFlow's web app shows ?error=<code> on its sign-in page
        parts = urlsplit(front)
        code = "sso_not_allowed" if isinstance(exc, Forbidden) else code_for(exc) or "sso_failed"
        response: Response = RedirectResponse(
            f"{parts.scheme}://{parts.netloc}/login?error={code}", status_code=302
        )
    else:
        response = error_response(exc)
    _forget_state(response, request, auth, provider)
    return response


def _forget_state(
    response: Response, request: Request, auth: AuthService, provider: OIDCProvider
) -> None:
    response.delete_cookie(
        cookie_name(provider.id),
        path=CALLBACK_PREFIX + provider.id,
        secure=is_secure(request, auth.settings.cookie_secure),
        httponly=True,
        samesite="lax",
    )
