"""Browser safety: the double-submit CSRF token on every state-changing request proven by the
session cookie, none for bearer credentials, the Origin check on sign-in, and cookie flags."""

from __future__ import annotations

import httpx
import pytest

from tests.auth.conftest import ALLOWED_ORIGIN
from tests.auth.parties import PASSWORD, Party, unique_email
from tests.support.live import LiveServer


def cookie_client(live: LiveServer, party: Party, csrf: str | None) -> httpx.AsyncClient:
    """The party's cookies, with ``X-CSRF-Token`` as given (None: not sent)."""
    headers = {"X-CSRF-Token": csrf} if csrf is not None else {}
    return httpx.AsyncClient(
        base_url=live.url, cookies=party.browser.cookies, headers=headers, timeout=60
    )


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/threads", {}),
        ("POST", "/threads/search", {}),
        ("PATCH", "/threads/{tid}", {"metadata": {"x": 1}}),
        ("DELETE", "/threads/{tid}", None),
        ("POST", "/api/v1/auth/keys", {"name": "forged"}),
        (
            "POST",
            "/api/v1/auth/change-password",
            {"current_password": PASSWORD, "new_password": "a brand new passphrase"},
        ),
    ],
)
async def test_cookie_requests_need_the_token(
    accounts_server: LiveServer,
    people: tuple[Party, Party, Party],
    method: str,
    path: str,
    body: object,
) -> None:
    alice = people[0]
    tid = (await alice.sdk.threads.create())["thread_id"]
    url = path.format(tid=tid)
    token = alice.browser.cookies["csrf_token"]
    for csrf in (None, "", "not-the-token", token + "x"):
        async with cookie_client(accounts_server, alice, csrf) as client:
            response = await client.request(method, url, json=body)
        assert (response.status_code, response.json()["code"]) == (403, "csrf_failed"), csrf
    # nothing happened: the thread is still there, unchanged
    assert (await alice.sdk.threads.get(tid))["metadata"] == {"user_id": alice.user_id}
    async with cookie_client(accounts_server, alice, token) as client:
        response = await client.request(method, url, json=body)
    assert response.status_code < 400, response.text


async def test_reads_and_bearer_credentials_need_no_token(
    accounts_server: LiveServer, people: tuple[Party, Party, Party]
) -> None:
    alice = people[0]
    async with cookie_client(accounts_server, alice, None) as client:
        assert (await client.get("/api/v1/auth/me")).status_code == 200
    # an API key, or the session token sent as a bearer credential, is no ambient credential
    session = alice.browser.cookies["access_token"]
    for headers in ({"x-api-key": alice.key}, {"Authorization": f"Bearer {session}"}):
        async with httpx.AsyncClient(base_url=accounts_server.url, headers=headers) as client:
            assert (await client.post("/threads", json={})).status_code == 200


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (None, True),
        ("{own}", True),
        (ALLOWED_ORIGIN, True),
        ("https://evil.example", False),
        ("null", False),
        ("http://127.0.0.1.evil.example", False),
    ],
)
async def test_sign_in_refuses_foreign_origins(
    accounts_server: LiveServer, origin: str | None, allowed: bool
) -> None:
    email = unique_email()
    headers = {} if origin is None else {"Origin": origin.format(own=accounts_server.url)}
    async with httpx.AsyncClient(base_url=accounts_server.url, headers=headers) as client:
        registered = await client.post(
            "/api/v1/auth/register", json={"email": email, "password": PASSWORD}
        )
        login = await client.post(
            "/api/v1/auth/login/local", data={"username": email, "password": PASSWORD}
        )
        logout = await client.post("/api/v1/auth/logout")
    if allowed:
        assert [registered.status_code, login.status_code, logout.status_code] == [201, 200, 200]
    else:
        # A form or body-less POST is one a page can send without a preflight: the edge's
        # cross-site guard refuses it before identity is looked at; JSON reaches the
        # sign-in check of its Origin.
        refusals = [(r.status_code, r.json()["code"]) for r in (registered, login, logout)]
        assert refusals == [
            (403, "csrf_failed"),
            (403, "cross_site_request"),
            (403, "cross_site_request"),
        ]
        for response in (registered, login, logout):
            assert "set-cookie" not in response.headers


async def test_sign_in_through_a_same_origin_proxy(accounts_server: LiveServer) -> None:
    """DeerFlow's web app signs in through its own server's rewrite: the browser's Origin is
    the app's, and the proxy says so in X-Forwarded-Host."""
    headers = {
        "Origin": "http://deerflow.internal:3000",
        "X-Forwarded-Host": "deerflow.internal:3000",
        "X-Forwarded-Proto": "http",
    }
    async with httpx.AsyncClient(base_url=accounts_server.url, headers=headers) as client:
        registered = await client.post(
            "/api/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}
        )
        other = await client.post(
            "/api/v1/auth/logout", headers={"X-Forwarded-Host": "elsewhere.internal:3000"}
        )
    assert registered.status_code == 201
    assert other.status_code == 403


async def test_cookies_are_secure_over_https(accounts_server: LiveServer) -> None:
    """Behind a TLS proxy (``X-Forwarded-Proto: https`` from a trusted address)."""
    async with httpx.AsyncClient(
        base_url=accounts_server.url, headers={"X-Forwarded-Proto": "https"}
    ) as client:
        response = await client.post(
            "/api/v1/auth/register", json={"email": unique_email(), "password": PASSWORD}
        )
    lines = response.headers.get_list("set-cookie")
    assert len(lines) == 2
    assert all("; secure" in line.lower() for line in lines)
    session = next(line for line in lines if line.startswith("access_token="))
    assert "httponly" in session.lower() and "samesite=lax" in session.lower()
