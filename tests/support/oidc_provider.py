"""A small OpenID Connect provider for tests: discovery, JWKS, the authorization code flow with
PKCE (S256 only) and ID tokens signed RS256. It signs in whoever the test says
(``sign_in_as``) and can be told to misbehave (``tamper``), so the real client code of fawn
is driven through the real flow without the internet."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

Tamper = Literal[
    "none",
    "wrong_nonce",
    "wrong_audience",
    "wrong_issuer",
    "bad_signature",
    "expired",
    "no_id_token",
]


@dataclass
class Person:
    subject: str
    email: str
    email_verified: bool = True
    name: str = "Test Person"


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str
    person: Person
    expires: float


@dataclass
class OIDCProvider:
    client_id: str = "fawn-test"
    client_secret: str = "fawn-test-secret"
    redirect_uris: set[str] = field(default_factory=set)
    person: Person | None = None
    tamper: Tamper = "none"
    issuer: str = ""
    #: what the token endpoint saw, for assertions
    exchanges: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._kid = secrets.token_hex(4)
        self._grants: dict[str, _Grant] = {}

    def sign_in_as(self, person: Person) -> None:
        self.person = person

    # -- endpoints ---------------------------------------------------------------------------

    async def discovery(self, request: Request) -> Response:
        base = self.issuer
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "jwks_uri": f"{base}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                ],
            }
        )

    async def jwks(self, request: Request) -> Response:
        jwk = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        jwk.update({"kid": self._kid, "use": "sig", "alg": "RS256"})
        return JSONResponse({"keys": [jwk]})

    async def authorize(self, request: Request) -> Response:
        q = request.query_params
        problem = self._authorize_problem(q)
        if problem is not None:
            return JSONResponse({"error": "invalid_request", "error_description": problem}, 400)
        assert self.person is not None
        code = secrets.token_urlsafe(24)
        self._grants[code] = _Grant(
            client_id=q["client_id"],
            redirect_uri=q["redirect_uri"],
            challenge=q["code_challenge"],
            nonce=q.get("nonce", ""),
            person=self.person,
            expires=time.monotonic() + 60,
        )
        query = urlencode({"code": code, "state": q.get("state", "")})
        return RedirectResponse(f"{q['redirect_uri']}?{query}", status_code=302)

    def _authorize_problem(self, q: Any) -> str | None:
        if q.get("response_type") != "code":
            return "response_type must be code"
        if q.get("client_id") != self.client_id:
            return "unknown client"
        if q.get("redirect_uri") not in self.redirect_uris:
            return f"unregistered redirect_uri {q.get('redirect_uri')}"
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return "PKCE with S256 is required"
        if "openid" not in q.get("scope", "").split():
            return "scope must include openid"
        if self.person is None:
            return "nobody is signing in"
        return None

    async def token(self, request: Request) -> Response:
        form = dict(await request.form())
        self.exchanges.append({k: str(v) for k, v in form.items()})
        client_id, secret = self._client_auth(request, form)
        grant = self._grants.pop(str(form.get("code", "")), None)
        problem = self._token_problem(form, client_id, secret, grant)
        if problem is not None:
            return JSONResponse({"error": "invalid_grant", "error_description": problem}, 400)
        assert grant is not None
        body: dict[str, Any] = {"access_token": secrets.token_urlsafe(16), "token_type": "Bearer"}
        if self.tamper != "no_id_token":
            body["id_token"] = self._id_token(grant)
        return JSONResponse(body)

    def _client_auth(self, request: Request, form: dict[str, Any]) -> tuple[str, str]:
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return user, password
        return str(form.get("client_id", "")), str(form.get("client_secret", ""))

    def _token_problem(
        self, form: dict[str, Any], client_id: str, secret: str, grant: _Grant | None
    ) -> str | None:
        if form.get("grant_type") != "authorization_code":
            return "grant_type must be authorization_code"
        if client_id != self.client_id or secret != self.client_secret:
            return "client authentication failed"
        if grant is None or grant.expires < time.monotonic():
            return "unknown, used or expired code"
        if grant.redirect_uri != form.get("redirect_uri"):
            return "redirect_uri differs from the authorization request"
        verifier = str(form.get("code_verifier", ""))
        digest = hashlib.sha256(verifier.encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
            return "PKCE verification failed"
        return None

    def _id_token(self, grant: _Grant) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": grant.person.subject,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": grant.nonce,
            "email": grant.person.email,
            "email_verified": grant.person.email_verified,
            "name": grant.person.name,
        }
        key = self._key
        if self.tamper == "wrong_nonce":
            claims["nonce"] = "not-the-nonce"
        elif self.tamper == "wrong_audience":
            claims["aud"] = "someone-else"
        elif self.tamper == "wrong_issuer":
            claims["iss"] = "https://evil.example"
        elif self.tamper == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif self.tamper == "bad_signature":
            key = self._other_key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self._kid})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self.discovery),
                Route("/jwks", self.jwks),
                Route("/authorize", self.authorize),
                Route("/token", self.token, methods=["POST"]),
            ]
        )


class ProviderThread:
    """The provider served by uvicorn on a free loopback port, on a thread of its own."""

    def __init__(self, provider: OIDCProvider) -> None:
        self.provider = provider
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ProviderThread:
        config = uvicorn.Config(self.provider.app(), host="127.0.0.1", port=0, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=asyncio.run, args=(self._server.serve(),))
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test OIDC provider did not start")
            time.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.provider.issuer = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            with contextlib.suppress(RuntimeError):
                self._thread.join(timeout=15)
