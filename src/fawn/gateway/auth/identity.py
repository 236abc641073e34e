"""Accounts mode (``local`` and ``oidc``): from a request's credentials to a Principal.

A session token is checked in three steps: its signature (no I/O), then the session row and
the user's token version (one indexed query, remembered for ``auth.revocation_seconds``). An
API key is one indexed row compared in constant time, remembered the same way.
"""

from __future__ import annotations

from fawn.gateway.auth.apikeys import looks_like_key, parse_key, secret_hash
from fawn.gateway.auth.cache import PrincipalCache
from fawn.gateway.auth.credentials import Credentials
from fawn.gateway.auth.errors import InvalidToken
from fawn.gateway.auth.principal import Principal, user_principal
from fawn.gateway.auth.tokens import TokenCodec
from fawn.store.api_keys import ApiKeyRepository
from fawn.store.sessions import SessionRepository

_ENDED = "the session ended (signed out, password changed or account disabled): sign in again"


class AccountIdentity:
    def __init__(
        self,
        *,
        codec: TokenCodec,
        sessions: SessionRepository,
        keys: ApiKeyRepository,
        cache: PrincipalCache,
    ) -> None:
        self._codec = codec
        self._sessions = sessions
        self._keys = keys
        self.cache = cache

    async def resolve(self, credentials: Credentials) -> tuple[Principal, bool] | None:
        """The caller and whether the ambient cookie proved it (CSRF applies), or None when
        nothing was presented. Raises an ``AuthError`` for a credential that does not hold."""
        if credentials.bearer is not None:
            if looks_like_key(credentials.bearer):
                return await self._api_key(credentials.bearer), False
            return await self._session(credentials.bearer), False
        if credentials.cookie is not None:
            return await self._session(credentials.cookie), True
        return None

    async def _session(self, token: str) -> Principal:
        claims = self._codec.decode(token)
        key = ("session", claims.session_id)
        principal = self.cache.get(key)
        if principal is None:
            user = await self._sessions.user_of(claims.session_id)
            if user is None or user.disabled:
                raise InvalidToken(_ENDED)
            principal = user_principal(user, "session", session_id=claims.session_id)
            self.cache.put(key, principal)
        if principal.user_id != claims.user_id or principal.token_version != claims.token_version:
            raise InvalidToken(_ENDED)
        return principal

    async def _api_key(self, token: str) -> Principal:
        parsed = parse_key(token)
        if parsed is None:
            raise InvalidToken("the API key is malformed")
        digest = secret_hash(parsed.secret)
        key = ("api_key", parsed.key_id, digest)
        principal = self.cache.get(key)
        if principal is None:
            user = await self._keys.user_of(parsed.key_id, digest)
            if user is None or user.disabled:
                raise InvalidToken("the API key is not valid (unknown, revoked or expired)")
            principal = user_principal(user, "api_key")
            self.cache.put(key, principal)
        return principal
