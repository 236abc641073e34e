"""The sign-in limit: per client address, counted before the password is checked, cleared by
a success; shared by every worker through Redis. The same two workers also show sessions,
keys and revocations working across workers."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.auth.parties import PASSWORD, accounts_auth, browser, unique_email
from tests.support.live import LiveServer
from tests.support.pg import create_database, drop_database

REDIS_URL = "redis://127.0.0.1:6379/0"


async def login(url: str, email: str, password: str, ip: str | None = None) -> httpx.Response:
    headers = {"X-Real-IP": ip} if ip else {}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        return await client.post(
            "/api/v1/auth/login/local", data={"username": email, "password": password}
        )


async def register(url: str) -> str:
    email = unique_email()
    async with httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
        )
    assert response.status_code == 201
    return email


@pytest.mark.timeout(300)
async def test_failed_sign_ins_lock_the_address(
    make_auth_server: Callable[..., LiveServer],
) -> None:
    live = make_auth_server(accounts_auth(login_rate_limit={"max_failures": 3}))
    email = await register(live.url)
    # a success clears the count: two wrong, one right, as often as you like
    for _ in range(3):
        statuses = [(await login(live.url, email, "wrong password!")).status_code for _ in range(2)]
        statuses.append((await login(live.url, email, PASSWORD)).status_code)
        assert statuses == [401, 401, 200]
    # the limit counts attempts as they arrive, even a burst in parallel
    burst = await asyncio.gather(*(login(live.url, email, "wrong password!") for _ in range(6)))
    assert sorted(r.status_code for r in burst) == [401, 401, 401, 429, 429, 429]
    locked = await login(live.url, email, PASSWORD)
    assert (locked.status_code, locked.json()["code"]) == (429, "too_many_attempts")
    assert locked.json()["retryable"] is True
    assert 0 < int(locked.headers["retry-after"]) <= 300
    # X-Real-IP from an untrusted peer is the client's own claim: ignored
    spoofed = await login(live.url, email, PASSWORD, ip="203.0.113.99")
    assert spoofed.status_code == 429


@pytest.fixture
def shared_deployment(
    make_auth_server: Callable[..., LiveServer], tmp_path: Path
) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two workers: one PostgreSQL database, one Redis, one data directory; a trusted proxy
    (127.0.0.1) names the client in X-Real-IP."""
    name, url = create_database()
    prefix = f"fawn-t-{uuid.uuid4().hex[:8]}"
    auth = accounts_auth(
        login_rate_limit={"max_failures": 3},
        trusted_proxies=["127.0.0.1/32"],
        redis_url=REDIS_URL,
        revocation_seconds=0.5,
    )
    common = {
        "auth": auth,
        "data_dir": tmp_path / "shared",
        "database": {"url": url},
        "streams": {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix},
    }
    try:
        yield make_auth_server(**common), make_auth_server(**common)
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        client.close()
        drop_database(name)


@pytest.mark.timeout(600)
async def test_two_workers_share_limits_sessions_and_revocations(
    shared_deployment: tuple[LiveServer, LiveServer],
) -> None:
    a, b = shared_deployment
    email = await register(a.url)
    client_ip = "203.0.113.7"
    for live in (a, b, a):
        assert (await login(live.url, email, "wrong password!", ip=client_ip)).status_code == 401
    assert (await login(b.url, email, PASSWORD, ip=client_ip)).status_code == 429
    # another client (per the trusted proxy) is not locked
    assert (await login(a.url, email, PASSWORD, ip="203.0.113.8")).status_code == 200

    # a session opened on one worker works on the other; signing out ends it on both
    async with browser(a.url) as on_a:
        await on_a.post("/api/v1/auth/login/local", data={"username": email, "password": PASSWORD})
        key = (await on_a.post("/api/v1/auth/keys", json={"name": "w"})).json()
        cookies = dict(on_a.cookies)
        async with httpx.AsyncClient(base_url=b.url, cookies=cookies) as on_b:
            assert (await on_b.get("/api/v1/auth/me")).status_code == 200
            assert (
                await on_b.get("/api/v1/auth/me", headers={"x-api-key": key["key"]})
            ).status_code == 200
            await on_a.post("/api/v1/auth/logout")
            await until_refused(on_b, {})
            # a key revoked on one worker stops working on the other
            async with browser(a.url) as again:
                await again.post(
                    "/api/v1/auth/login/local", data={"username": email, "password": PASSWORD}
                )
                revoked = await again.delete(f"/api/v1/auth/keys/{key['key_id']}")
                assert revoked.status_code == 204
            await until_refused(on_b, {"x-api-key": key["key"]})


async def until_refused(client: httpx.AsyncClient, headers: dict[str, str]) -> None:
    """Poll ``/me`` until it answers 401 (generous deadline; the rule is 'within a second')."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (await client.get("/api/v1/auth/me", headers=headers)).status_code == 401:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the revocation never reached the other worker")
