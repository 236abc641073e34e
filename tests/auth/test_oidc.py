"""OpenID Connect sign-in, driven through the real flow against a local provider (discovery,
authorization code with PKCE, token exchange, RS256 ID token checked against the JWKS)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.auth.parties import accounts_auth
from tests.conftest import base_config
from tests.support.live import LiveServer
from tests.support.oidc_provider import OIDCProvider, Person, ProviderThread

CALLBACK = "/api/v1/auth/callback/test"


@pytest.fixture(scope="module")
def provider() -> Iterator[OIDCProvider]:
    running = ProviderThread(OIDCProvider()).start()
    try:
        yield running.provider
    finally:
        running.stop()


@pytest.fixture(scope="module")
def oidc_server(
    provider: OIDCProvider, stub: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("oidc")
    auth = accounts_auth(
        mode="oidc",
        oidc={
            "providers": {
                "test": {
                    "issuer": provider.issuer,
                    "client_id": provider.client_id,
                    "client_secret": provider.client_secret,
                    "display_name": "Test IdP",
                    "allowed_email_domains": ["example.com"],
                    "admin_emails": ["boss@example.com"],
                }
            }
        },
    )
    live = LiveServer(base_config(stub, workdir / "data", auth=auth), workdir).start()
    provider.redirect_uris.add(live.url + CALLBACK)
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
async def web(oidc_server: LiveServer, provider: OIDCProvider) -> AsyncIterator[httpx.AsyncClient]:
    provider.tamper = "none"
    async with httpx.AsyncClient(base_url=oidc_server.url, timeout=60) as client:
        yield client


async def sign_in(web: httpx.AsyncClient, next_path: str = "/workspace") -> httpx.Response:
    """Start at fawn, follow the provider, come back to fawn's callback; fawn's last answer."""
    start = await web.get("/api/v1/auth/oauth/test", params={"next": next_path})
    assert start.status_code == 302, start.text
    at_provider = await web.get(start.headers["location"])
    assert at_provider.status_code == 302, at_provider.text
    back = at_provider.headers["location"]
    assert back.startswith(str(web.base_url).rstrip("/") + CALLBACK)
    return await web.get(back)


async def test_providers_are_listed_without_secrets(web: httpx.AsyncClient) -> None:
    assert (await web.get("/api/v1/auth/providers")).json() == {
        "providers": [{"id": "test", "display_name": "Test IdP", "type": "oidc"}]
    }


async def test_authorization_request_uses_pkce_state_and_nonce(
    web: httpx.AsyncClient, provider: OIDCProvider
) -> None:
    start = await web.get("/api/v1/auth/oauth/test")
    location = urlsplit(start.headers["location"])
    query = {k: v[0] for k, v in parse_qs(location.query).items()}
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{provider.issuer}/authorize"
    assert query["response_type"] == "code"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43 and len(query["state"]) >= 43
    assert query["nonce"] and query["scope"] == "openid email profile"
    cookie = start.headers["set-cookie"].lower()
    assert "httponly" in cookie and f"path={CALLBACK}" in cookie and "samesite=lax" in cookie


async def test_sign_in_creates_then_finds_the_account(
    web: httpx.AsyncClient, provider: OIDCProvider
) -> None:
    provider.sign_in_as(Person(subject="sub-alice", email="Alice@Example.com", name="Alice"))
    done = await sign_in(web)
    assert (done.status_code, done.headers["location"]) == (302, "/workspace")
    assert {"access_token", "csrf_token"} <= set(web.cookies)
    me = (await web.get("/api/v1/auth/me")).json()
    assert me == {
        "id": me["id"],
        "email": "alice@example.com",
        "system_role": "user",
        "needs_setup": False,
        "oauth_provider": "test",
    }
    # the provider authenticated the client and proved the PKCE verifier
    exchange = provider.exchanges[-1]
    assert exchange["grant_type"] == "authorization_code" and len(exchange["code_verifier"]) > 43
    # signing in again (new browser) finds the same account
    async with httpx.AsyncClient(base_url=str(web.base_url)) as again:
        await sign_in(again)
        assert (await again.get("/api/v1/auth/me")).json()["id"] == me["id"]
        thread = (
            await again.post(
                "/threads", json={}, headers={"X-CSRF-Token": again.cookies["csrf_token"]}
            )
        ).json()
    assert thread["metadata"] == {"user_id": me["id"]}


async def test_admin_emails_get_the_admin_role(
    web: httpx.AsyncClient, provider: OIDCProvider
) -> None:
    provider.sign_in_as(Person(subject="sub-boss", email="boss@example.com"))
    await sign_in(web)
    assert (await web.get("/api/v1/auth/me")).json()["system_role"] == "admin"


@pytest.mark.parametrize(
    ("person", "tamper"),
    [
        (Person(subject="s1", email="mallory@evil.example"), "none"),
        (Person(subject="s2", email="unverified@example.com", email_verified=False), "none"),
        (Person(subject="s3", email="n@example.com"), "wrong_nonce"),
        (Person(subject="s4", email="a@example.com"), "wrong_audience"),
        (Person(subject="s5", email="i@example.com"), "wrong_issuer"),
        (Person(subject="s6", email="s@example.com"), "bad_signature"),
        (Person(subject="s7", email="e@example.com"), "expired"),
        (Person(subject="s8", email="t@example.com"), "no_id_token"),
    ],
)
async def test_refused_identities_get_no_session(
    web: httpx.AsyncClient, provider: OIDCProvider, person: Person, tamper: Any
) -> None:
    provider.sign_in_as(person)
    provider.tamper = tamper
    done = await sign_in(web)
    expected = (403, "forbidden") if tamper == "none" else (502, "sso_failed")
    assert (done.status_code, done.json()["code"]) == expected
    assert "access_token" not in web.cookies
    assert (await web.get("/api/v1/auth/me")).status_code == 401


async def test_forged_or_replayed_callbacks_are_refused(
    web: httpx.AsyncClient, provider: OIDCProvider
) -> None:
    provider.sign_in_as(Person(subject="sub-replay", email="replay@example.com"))
    start = await web.get("/api/v1/auth/oauth/test")
    back = (await web.get(start.headers["location"])).headers["location"]
    query = parse_qs(urlsplit(back).query)
    code, state = query["code"][0], query["state"][0]
    # another browser (no state cookie) presenting the same code and state
    async with httpx.AsyncClient(base_url=str(web.base_url)) as stranger:
        stolen = await stranger.get(CALLBACK, params={"code": code, "state": state})
    assert (stolen.status_code, stolen.json()["code"]) == (403, "forbidden")
    # the right browser, the wrong state
    wrong = await web.get(CALLBACK, params={"code": code, "state": state + "x"})
    assert (wrong.status_code, wrong.json()["code"]) == (403, "forbidden")
    # the state cookie was spent by that failure: the code cannot be used again either
    replay = await web.get(CALLBACK, params={"code": code, "state": state})
    assert replay.status_code == 403
    assert "access_token" not in web.cookies


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example", "/\\evil", "x"])
async def test_next_never_leaves_the_site(
    web: httpx.AsyncClient, provider: OIDCProvider, target: str
) -> None:
    provider.sign_in_as(Person(subject="sub-next", email="next@example.com"))
    done = await sign_in(web, next_path=target)
    assert (done.status_code, done.headers["location"]) == (302, "/")


async def test_unknown_provider_is_404(web: httpx.AsyncClient) -> None:
    response = await web.get("/api/v1/auth/oauth/nope")
    assert (response.status_code, response.json()["code"]) == (404, "auth_mode_mismatch")
