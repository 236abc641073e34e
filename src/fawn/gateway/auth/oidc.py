"""OpenID Connect sign-in (authorization code flow with PKCE, S256): discovery, the
authorization URL, the code exchange and the ID token's verification against the provider's
published keys (signature, issuer, audience, expiry, nonce)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt

from fawn.config.settings import OIDCProviderSettings
from fawn.gateway.auth.errors import SignInFailed

#: Signature algorithms accepted on ID tokens (asymmetric only: ``none`` and HMAC with a
#: public value as the key are the classic forgeries).
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"]
_DISCOVERY_SECONDS = 3600.0
_JWKS_REFRESH_SECONDS = 10.0
_LEEWAY_SECONDS = 60


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who the provider says signed in."""

    subject: str
    email: str | None
    email_verified: bool
    name: str | None


@dataclass(frozen=True, kw_only=True)
class Flow:
    """What the browser carries through the provider (in the signed state cookie)."""

    state: str
    nonce: str
    verifier: str

    @classmethod
    def new(cls) -> Flow:
        return cls(
            state=secrets.token_urlsafe(32),
            nonce=secrets.token_urlsafe(16),
            verifier=secrets.token_urlsafe(48),
        )

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OIDCProvider:
    def __init__(self, provider_id: str, settings: OIDCProviderSettings, http: httpx.AsyncClient):
        self.id = provider_id
        self.settings = settings
        self._http = http
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._keys_fetched = 0.0

    @property
    def display_name(self) -> str:
        return self.settings.display_name or self.id

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is not None and self._metadata[0] > time.monotonic():
            return self._metadata[1]
        url = f"{self.settings.issuer}/.well-known/openid-configuration"
        document = await self._get_json(url, "discovery")
        for field in ("authorization_endpoint", "token_endpoint", "jwks_uri", "issuer"):
            if not isinstance(document.get(field), str):
                raise SignInFailed(f"{self.id}: the discovery document has no {field}")
        if document["issuer"].rstrip("/") != self.settings.issuer:
            raise SignInFailed(f"{self.id}: the discovery document names another issuer")
        self._metadata = (time.monotonic() + _DISCOVERY_SECONDS, document)
        return document

    async def authorization_url(self, flow: Flow, redirect_uri: str) -> str:
        endpoint = (await self.metadata())["authorization_endpoint"]
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.settings.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.settings.scopes),
                "state": flow.state,
                "nonce": flow.nonce,
                "code_challenge": flow.challenge,
                "code_challenge_method": "S256",
            }
        )
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def sign_in(self, code: str, flow: Flow, redirect_uri: str) -> Identity:
        """Exchange the code and verify the ID token it brings back."""
        tokens = await self._exchange(code, flow, redirect_uri)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise SignInFailed(f"{self.id}: the token response has no id_token")
        claims = await self._verify(id_token, flow.nonce)
        email = claims.get("email")
        return Identity(
            subject=str(claims["sub"]),
            email=email.strip().lower() if isinstance(email, str) else None,
            email_verified=claims.get("email_verified") is True,
            name=claims.get("name") if isinstance(claims.get("name"), str) else None,
        )

    async def _exchange(self, code: str, flow: Flow, redirect_uri: str) -> dict[str, Any]:
        settings = self.settings
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": flow.verifier,
            "client_id": settings.client_id,
        }
        extra: dict[str, Any] = {}
        if settings.token_endpoint_auth == "client_secret_basic" and settings.client_secret:
            extra["auth"] = httpx.BasicAuth(settings.client_id, settings.client_secret)
        elif settings.token_endpoint_auth == "client_secret_post" and settings.client_secret:
            form["client_secret"] = settings.client_secret
        endpoint = (await self.metadata())["token_endpoint"]
        try:
            response = await self._http.post(endpoint, data=form, **extra)
        except httpx.HTTPError as exc:
            raise SignInFailed(f"{self.id}: the token endpoint is unreachable: {exc}") from exc
        if response.status_code != 200:
            raise SignInFailed(
                f"{self.id}: the token endpoint refused the code ({response.status_code})"
            )
        return _json_object(response, f"{self.id}: token response")

    async def _verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError as exc:
            raise SignInFailed(f"{self.id}: the id_token is malformed") from exc
        key = await self._key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key.key,
                algorithms=[a for a in ALGORITHMS if a == header.get("alg")],
                audience=self.settings.client_id,
                issuer=(await self.metadata())["issuer"],
                leeway=_LEEWAY_SECONDS,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise SignInFailed(f"{self.id}: the id_token does not verify: {exc}") from exc
        if not secrets.compare_digest(str(claims.get("nonce", "")), nonce):
            raise SignInFailed(f"{self.id}: the id_token's nonce does not match this sign-in")
        return claims

    async def _key(self, kid: Any) -> jwt.PyJWK:
        kid = kid if isinstance(kid, str) else ""
        if kid not in self._keys and time.monotonic() - self._keys_fetched > _JWKS_REFRESH_SECONDS:
            await self._fetch_keys()
        if kid in self._keys:
            return self._keys[kid]
        if not kid and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        raise SignInFailed(f"{self.id}: the id_token is signed with an unknown key")

    async def _fetch_keys(self) -> None:
        document = await self._get_json((await self.metadata())["jwks_uri"], "jwks")
        keys: dict[str, jwt.PyJWK] = {}
        for entry in document.get("keys", []):
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                keys[str(entry.get("kid") or "")] = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue
        self._keys = keys
        self._keys_fetched = time.monotonic()

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            response = await self._http.get(url)
        except httpx.HTTPError as exc:
            raise SignInFailed(f"{self.id}: {what} unreachable: {exc}") from exc
        if response.status_code != 200:
            raise SignInFailed(f"{self.id}: {what} answered {response.status_code}")
        return _json_object(response, f"{self.id}: {what}")


def _json_object(response: httpx.Response, what: str) -> dict[str, Any]:
    try:
        document = response.json()
    except ValueError as exc:
        raise SignInFailed(f"{what} is not JSON") from exc
    if not isinstance(document, dict):
        raise SignInFailed(f"{what} is not a JSON object")
    return document
