"""AuthService: everything identity needs, opened with the app's services and closed with
them."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from redis.asyncio import Redis

from fawn.config.settings import AppConfig, AuthSettings
from fawn.gateway.auth.accounts import Accounts
from fawn.gateway.auth.cache import PrincipalCache
from fawn.gateway.auth.identity import AccountIdentity
from fawn.gateway.auth.langgraph_auth import LangGraphAuth
from fawn.gateway.auth.oidc import OIDCProvider
from fawn.gateway.auth.oidc_state import state_key
from fawn.gateway.auth.passwords import Passwords
from fawn.gateway.auth.ratelimit import LoginLimiter, MemoryLimiter, RedisLimiter
from fawn.gateway.auth.tokens import TokenCodec, load_or_create_secret
from fawn.store.api_keys import ApiKeyRepository
from fawn.store.database import Database
from fawn.store.sessions import SessionRepository
from fawn.store.threads import ThreadRepository
from fawn.store.users import UserRepository

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(kw_only=True)
class AuthService:
    settings: AuthSettings
    #: browser origins allowed besides this server's own (``server.cors_origins``)
    allowed_origins: tuple[str, ...]
    accounts: Accounts
    keys: ApiKeyRepository
    identity: AccountIdentity | None
    custom: LangGraphAuth | None
    providers: dict[str, OIDCProvider] = field(default_factory=dict)
    trusted_proxies: tuple[Network, ...] = ()
    state_key: bytes = b""

    @property
    def mode(self) -> str:
        return self.settings.mode

    @property
    def accounts_on(self) -> bool:
        """Whether this server keeps accounts (``local`` or ``oidc``)."""
        return self.settings.mode in ("local", "oidc")


def limiter_for(config: AppConfig) -> LoginLimiter:
    url = config.auth.redis_url
    if url is None and config.streams.backend == "redis":
        url = config.streams.redis_url
    if url is None:
        return MemoryLimiter(config.auth.login_rate_limit)
    redis = Redis.from_url(url)
    return RedisLimiter(redis, config.auth.login_rate_limit, config.streams.redis_prefix)


def accounts_for(
    config: AppConfig,
    db: Database,
    data_dir: Path,
    threads: ThreadRepository,
    codec: TokenCodec,
    *,
    limiter: LoginLimiter | None = None,
    cache: PrincipalCache | None = None,
) -> Accounts:
    """The accounts of this server, for the app or for the ``fawn users`` commands (which
    sign nobody in: no shared limiter, nothing cached)."""
    settings = config.auth
    return Accounts(
        settings=settings,
        users=UserRepository(db),
        sessions=SessionRepository(db),
        passwords=Passwords(settings.password),
        codec=codec,
        limiter=limiter or MemoryLimiter(settings.login_rate_limit),
        cache=cache or PrincipalCache(0),
        threads=threads,
        data_dir=data_dir,
    )


@asynccontextmanager
async def open_auth(
    config: AppConfig, db: Database, data_dir: Path, threads: ThreadRepository
) -> AsyncIterator[AuthService]:
    settings = config.auth
    async with AsyncExitStack() as stack:
        secret = await asyncio.to_thread(load_or_create_secret, settings.secret, data_dir)
        codec = TokenCodec(secret)
        cache = PrincipalCache(settings.revocation_seconds)
        limiter = limiter_for(config)
        stack.push_async_callback(limiter.aclose)
        keys = ApiKeyRepository(db)
        http = httpx.AsyncClient(timeout=settings.oidc.http_timeout_seconds)
        stack.push_async_callback(http.aclose)
        accounts = accounts_for(config, db, data_dir, threads, codec, limiter=limiter, cache=cache)
        custom = None
        if settings.mode == "custom" and settings.custom is not None:
            custom = await asyncio.to_thread(LangGraphAuth.from_settings, settings.custom)
        yield AuthService(
            settings=settings,
            allowed_origins=tuple(config.server.cors_origins),
            accounts=accounts,
            keys=keys,
            identity=AccountIdentity(
                codec=codec, sessions=SessionRepository(db), keys=keys, cache=cache
            )
            if settings.mode in ("local", "oidc")
            else None,
            custom=custom,
            providers={
                pid: OIDCProvider(pid, provider, http)
                for pid, provider in settings.oidc.providers.items()
            }
            if settings.mode == "oidc"
            else {},
            trusted_proxies=tuple(
                ipaddress.ip_network(net, strict=False) for net in settings.trusted_proxies
            ),
            state_key=state_key(secret),
        )
