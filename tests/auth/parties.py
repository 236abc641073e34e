"""People using a fawn server with accounts: each has a browser-like session (cookies, the
CSRF header echoed as DeerFlow's web app does), an API key, and an SDK client on that key."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

PASSWORD = "a long enough passphrase"
#: Argon2id at a test-friendly cost (the defaults take tens of ms per hash).
CHEAP_PASSWORDS = {"argon2_memory_kib": 8192, "argon2_time_cost": 1}


def unique_email(prefix: str = "user") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}@example.com"


def accounts_auth(**overrides: Any) -> dict[str, Any]:
    return {"mode": "local", "password": CHEAP_PASSWORDS, **overrides}


async def _echo_csrf(request: httpx.Request, client: httpx.AsyncClient) -> None:
    token = client.cookies.get("csrf_token")
    if request.method in ("POST", "PUT", "PATCH", "DELETE") and token:
        request.headers.setdefault("X-CSRF-Token", token)


def browser(url: str) -> httpx.AsyncClient:
    """A client that keeps cookies and echoes ``csrf_token`` in ``X-CSRF-Token``."""
    client = httpx.AsyncClient(base_url=url, timeout=60)

    async def hook(request: httpx.Request) -> None:
        await _echo_csrf(request, client)

    client.event_hooks["request"] = [hook]
    return client


@dataclass
class Party:
    email: str
    user_id: str
    role: str
    browser: httpx.AsyncClient
    key: str
    api: httpx.AsyncClient
    sdk: LangGraphClient

    async def aclose(self) -> None:
        await self.browser.aclose()
        await self.api.aclose()
        await self.sdk.aclose()


async def _with_key(url: str, session: httpx.AsyncClient, user: dict[str, Any]) -> Party:
    created = await session.post("/api/v1/auth/keys", json={"name": "tests"})
    assert created.status_code == 201, created.text
    key = created.json()["key"]
    return Party(
        email=user["email"],
        user_id=user["id"],
        role=user["system_role"],
        browser=session,
        key=key,
        api=httpx.AsyncClient(base_url=url, headers={"x-api-key": key}, timeout=60),
        sdk=get_client(url=url, api_key=key, timeout=60),
    )


async def sign_up(url: str, email: str | None = None) -> Party:
    session = browser(url)
    email = email or unique_email()
    response = await session.post(
        "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
    )
    assert response.status_code == 201, response.text
    return await _with_key(url, session, response.json())


async def sign_in(url: str, email: str, password: str = PASSWORD) -> Party:
    session = browser(url)
    response = await session.post(
        "/api/v1/auth/login/local", data={"username": email, "password": password}
    )
    assert response.status_code == 200, response.text
    me = await session.get("/api/v1/auth/me")
    return await _with_key(url, session, me.json())


async def initialize(url: str, email: str, password: str = PASSWORD) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url) as client:
        return await client.post(
            "/api/v1/auth/initialize", json={"email": email, "password": password}
        )
