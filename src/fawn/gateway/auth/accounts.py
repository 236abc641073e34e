"""Accounts: sign-in, registration, the first admin, password changes, sessions, and the
accounts behind OpenID Connect identities."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from fawn.config.settings import AuthSettings, OIDCProviderSettings
from fawn.gateway.auth.adoption import adopt_single_user_threads
from fawn.gateway.auth.cache import PrincipalCache
from fawn.gateway.auth.errors import (
    Forbidden,
    InvalidCredentials,
    InvalidEmail,
    RegistrationDisabled,
)
from fawn.gateway.auth.oidc import Identity
from fawn.gateway.auth.passwords import Passwords
from fawn.gateway.auth.principal import Principal
from fawn.gateway.auth.ratelimit import LoginLimiter
from fawn.gateway.auth.tokens import SessionClaims, TokenCodec
from fawn.store.errors import EmailTaken
from fawn.store.sessions import SessionRepository
from fawn.store.threads import ThreadRepository
from fawn.store.types import utcnow
from fawn.store.users import NewUser, Role, UserRecord, UserRepository, normalize_email

# A dotted domain with a letters-only top level: what browsers' and DeerFlow's checks accept.
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z]{2,63}"
)

_WRONG = "incorrect email or password"


def check_email(email: str) -> str:
    normal = normalize_email(email)
    if len(normal) > 254 or not _EMAIL.fullmatch(normal):
        raise InvalidEmail(f"not a valid email address: {email!r}")
    return normal


@dataclass(frozen=True, kw_only=True)
class Session:
    """A session just opened: the token for the cookie and how long it lives."""

    token: str
    seconds: int
    remember: bool

    @property
    def cookie_max_age(self) -> int | None:
        return self.seconds if self.remember else None


class Accounts:
    def __init__(
        self,
        *,
        settings: AuthSettings,
        users: UserRepository,
        sessions: SessionRepository,
        passwords: Passwords,
        codec: TokenCodec,
        limiter: LoginLimiter,
        cache: PrincipalCache,
        threads: ThreadRepository,
        data_dir: Path,
    ) -> None:
        self._settings = settings
        self.users = users
        self._sessions = sessions
        self.passwords = passwords
        self._codec = codec
        self._limiter = limiter
        self._cache = cache
        self._threads = threads
        self._data_dir = data_dir

    # -- signing in and out ----------------------------------------------------------------

    async def sign_in(self, email: str, password: str, client: str) -> UserRecord:
        """The user with this email and password; every attempt counts toward the limit."""
        await self._limiter.attempt(client)
        user = await self.users.by_email(email) if len(email) <= 320 else None
        password_hash = user.password_hash if user is not None else None
        if not await self.passwords.verify(password_hash, password) or user is None:
            raise InvalidCredentials(_WRONG)
        if user.disabled:
            raise InvalidCredentials("this account is disabled")
        await self._limiter.succeeded(client)
        if password_hash is not None and self.passwords.needs_rehash(password_hash):
            user = await self._rehash(user, password)
        return user

    async def _rehash(self, user: UserRecord, password: str) -> UserRecord:
        # The cost was raised since this hash was made. Re-hashing moves the token version
        # on, which ends the user's other sessions: acceptable once per cost change.
        return await self.users.set_password(user.user_id, await self.passwords.hash(password))

    async def open_session(self, user: UserRecord, *, remember: bool) -> Session:
        seconds = int(self._settings.session_days * 86_400)
        expires_at = utcnow() + timedelta(seconds=seconds)
        session_id = await self._sessions.create(user.user_id, expires_at)
        token = self._codec.encode(
            SessionClaims(
                user_id=user.user_id,
                session_id=session_id,
                token_version=user.token_version,
                expires_at=expires_at,
            )
        )
        return Session(token=token, seconds=seconds, remember=remember)

    async def close_session(self, principal: Principal) -> None:
        if principal.session_id is not None:
            await self._sessions.delete(principal.session_id)
            self._cache.forget_user(principal.user_id)

    # -- creating accounts -------------------------------------------------------------------

    async def register(self, email: str, password: str) -> UserRecord:
        if not self._settings.registration_open:
            raise RegistrationDisabled("self sign-up is disabled on this server")
        return await self.create(email, password, role="user")

    async def initialize(self, email: str, password: str, *, adopt: bool = True) -> UserRecord:
        """The first admin (once only; :class:`AlreadyInitialized` after). It adopts the
        threads of the single-user server unless ``adopt`` is false."""
        normal = check_email(email)
        self.passwords.check_new(password, normal)
        admin = await self.users.create_first_admin(
            NewUser(email=normal, password_hash=await self.passwords.hash(password))
        )
        if adopt:
            await self.adopt(admin.user_id)
        return admin

    async def adopt(self, user_id: str) -> int:
        """Give the single-user server's threads to ``user_id``; how many."""
        return await adopt_single_user_threads(self._threads, self._data_dir, user_id)

    async def create(self, email: str, password: str, *, role: Role) -> UserRecord:
        """An account with a password (policy checked)."""
        normal = check_email(email)
        self.passwords.check_new(password, normal)
        return await self.users.create(
            NewUser(email=normal, password_hash=await self.passwords.hash(password), role=role)
        )

    async def set_password(self, user: UserRecord, password: str) -> UserRecord:
        """An operator's reset: every session and token of the user ends."""
        self.passwords.check_new(password, user.email)
        updated = await self.users.set_password(user.user_id, await self.passwords.hash(password))
        self._cache.forget_user(user.user_id)
        return updated

    async def change_password(
        self, principal: Principal, current: str, new: str, new_email: str | None
    ) -> UserRecord:
        user = await self.users.get(principal.user_id)
        if user is None:
            raise InvalidCredentials("the account no longer exists")
        if user.password_hash is None:
            raise InvalidCredentials(
                "this account signs in through an identity provider and has no password"
            )
        if not await self.passwords.verify(user.password_hash, current):
            raise InvalidCredentials("the current password is incorrect")
        email = check_email(new_email) if new_email else None
        self.passwords.check_new(new, email or user.email)
        updated = await self.users.set_password(
            user.user_id,
            await self.passwords.hash(new),
            email=email,
            needs_setup=False if (user.needs_setup and email) else None,
        )
        self._cache.forget_user(user.user_id)
        return updated

    # -- identity providers ------------------------------------------------------------------

    async def oidc_user(
        self, provider: str, settings: OIDCProviderSettings, identity: Identity
    ) -> UserRecord:
        """The account of a verified identity: already linked, linked now by a verified
        email, or created (when the provider's policy allows)."""
        linked = await self.users.by_oauth(provider, identity.subject)
        if linked is not None:
            return self._usable(linked)
        email = self._allowed_email(settings, identity)
        existing = await self.users.by_email(email)
        if existing is not None:
            if existing.oauth_provider is not None:
                raise Forbidden(f"{email} is already linked to another identity")
            linked = await self.users.link_identity(existing.user_id, provider, identity.subject)
            return self._usable(linked)
        if not settings.auto_create_users:
            raise Forbidden(f"no account for {email}, and this provider does not create them")
        admins = {normalize_email(a) for a in settings.admin_emails}
        try:
            return await self.users.create(
                NewUser(
                    email=email,
                    role="admin" if email in admins else "user",
                    display_name=identity.name,
                    oauth_provider=provider,
                    oauth_subject=identity.subject,
                )
            )
        except EmailTaken:
            raise Forbidden(f"{email} was registered at the same moment: sign in again") from None

    @staticmethod
    def _allowed_email(settings: OIDCProviderSettings, identity: Identity) -> str:
        if identity.email is None:
            raise Forbidden("the identity provider did not share an email address")
        if settings.require_verified_email and not identity.email_verified:
            raise Forbidden(f"the identity provider has not verified {identity.email}")
        domains = {d.lower().lstrip("@") for d in settings.allowed_email_domains}
        if domains and identity.email.rsplit("@", 1)[-1] not in domains:
            raise Forbidden(f"accounts of {identity.email.rsplit('@', 1)[-1]} may not sign in")
        return check_email(identity.email)

    @staticmethod
    def _usable(user: UserRecord) -> UserRecord:
        if user.disabled:
            raise Forbidden("this account is disabled")
        return user
