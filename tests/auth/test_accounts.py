"""The routes DeerFlow's web app signs in with, on both backends: the same paths, bodies and
cookies (setup-status, initialize, register, login/local, me, logout, change-password)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.auth.parties import PASSWORD, browser, unique_email
from tests.support.live import LiveServer


async def request(
    method: str, url: str, cookies: dict[str, str] | None = None, **kwargs: Any
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60, cookies=cookies) as client:
        return await client.request(method, url, **kwargs)


def cookie_attributes(response: httpx.Response) -> dict[str, str]:
    """``name → the rest of its Set-Cookie line`` (value removed), lowercased."""
    found = {}
    for line in response.headers.get_list("set-cookie"):
        name, _, rest = line.partition("=")
        found[name] = rest.partition(";")[2].strip().lower()
    return found


async def test_setup_status_initialize_once_then_409(make_auth_server) -> None:  # type: ignore[no-untyped-def]
    live: LiveServer = make_auth_server()
    async with browser(live.url) as web:
        assert (await web.get("/api/v1/auth/setup-status")).json() == {
            "needs_setup": True,
            "registration_enabled": True,
        }
        email = unique_email("first")
        created = await web.post(
            "/api/v1/auth/initialize", json={"email": email.upper(), "password": PASSWORD}
        )
        assert created.status_code == 201
        user = created.json()
        assert user == {
            "id": user["id"],
            "email": email,
            "system_role": "admin",
            "needs_setup": False,
            "oauth_provider": None,
        }
        cookies = cookie_attributes(created)
        assert cookies == {
            "access_token": "httponly; max-age=604800; path=/; samesite=lax",
            "csrf_token": "max-age=604800; path=/; samesite=strict",
        }
        assert (await web.get("/api/v1/auth/me")).json() == user
        assert (await web.get("/api/v1/auth/setup-status")).json() == {
            "needs_setup": False,
            "registration_enabled": True,
        }
    again = await request(
        "POST",
        f"{live.url}/api/v1/auth/initialize",
        json={"email": unique_email(), "password": PASSWORD},
    )
    assert (again.status_code, again.json()["code"]) == (409, "system_already_initialized")


async def test_concurrent_initialize_creates_one_admin(make_auth_server) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    live: LiveServer = make_auth_server()
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
        answers = await asyncio.gather(
            *(
                client.post(
                    "/api/v1/auth/initialize",
                    json={"email": unique_email(), "password": PASSWORD},
                )
                for _ in range(6)
            )
        )
    assert sorted(a.status_code for a in answers) == [201, 409, 409, 409, 409, 409]


async def test_register_login_me_logout(accounts_server: LiveServer) -> None:
    email = unique_email()
    async with browser(accounts_server.url) as web:
        registered = await web.post(
            "/api/v1/auth/register",
            json={"email": email, "password": PASSWORD, "remember_me": False},
        )
        assert registered.status_code == 201
        assert registered.json()["system_role"] == "user"
        # remember_me false: cookies end with the browser session (no Max-Age)
        assert cookie_attributes(registered)["access_token"] == "httponly; path=/; samesite=lax"
        await web.post("/api/v1/auth/logout")
        assert (await web.get("/api/v1/auth/me")).status_code == 401

        login = await web.post(
            "/api/v1/auth/login/local", data={"username": email, "password": PASSWORD}
        )
        assert login.json() == {"expires_in": 604800, "needs_setup": False}
        assert "access_token" not in login.text  # the token is only in the HttpOnly cookie
        me = await web.get("/api/v1/auth/me")
        assert me.json()["email"] == email
        session = web.cookies["access_token"]

        out = await web.post("/api/v1/auth/logout")
        assert out.json() == {"message": "Successfully logged out"}
        assert "access_token" not in web.cookies
    # the session ended on the server: the old cookie, replayed, is refused
    replay = await request(
        "GET", f"{accounts_server.url}/api/v1/auth/me", cookies={"access_token": session}
    )
    assert (replay.status_code, replay.json()["code"]) == (401, "token_invalid")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"email": "not-an-email", "password": PASSWORD}, 422, "invalid_email"),
        ({"email": "a@localhost", "password": PASSWORD}, 422, "invalid_email"),
        ({"email": "x@example.com", "password": "short"}, 422, "weak_password"),
        ({"email": "x@example.com", "password": "aaaaaaaaaaaa"}, 422, "weak_password"),
        ({"email": "same@example.com", "password": "same@example.com"}, 422, "weak_password"),
        ({"email": "x@example.com", "password": "p" * 2000}, 422, "weak_password"),
        ({"email": "x@example.com"}, 422, "invalid_input"),
        ({"email": "x@example.com", "password": PASSWORD, "role": "admin"}, 422, "invalid_input"),
    ],
)
async def test_register_refuses_bad_input(
    accounts_server: LiveServer, body: dict[str, str], status: int, code: str
) -> None:
    response = await request("POST", f"{accounts_server.url}/api/v1/auth/register", json=body)
    assert (response.status_code, response.json()["code"]) == (status, code)


async def test_register_twice_is_409(accounts_server: LiveServer) -> None:
    email = unique_email()
    url = f"{accounts_server.url}/api/v1/auth/register"
    assert (
        await request("POST", url, json={"email": email, "password": PASSWORD})
    ).status_code == 201
    again = await request("POST", url, json={"email": email.upper(), "password": PASSWORD})
    assert (again.status_code, again.json()["code"]) == (409, "email_already_exists")


async def test_wrong_password_and_unknown_email_look_alike(accounts_server: LiveServer) -> None:
    email = unique_email()
    url = accounts_server.url
    await request(
        "POST", f"{url}/api/v1/auth/register", json={"email": email, "password": PASSWORD}
    )
    wrong = await request(
        "POST",
        f"{url}/api/v1/auth/login/local",
        data={"username": email, "password": "not the password"},
        headers={"X-Real-IP": "198.51.100.1"},
    )
    unknown = await request(
        "POST",
        f"{url}/api/v1/auth/login/local",
        data={"username": unique_email(), "password": "not the password"},
    )
    assert wrong.status_code == unknown.status_code == 401
    assert (
        wrong.json()
        == unknown.json()
        == {
            "detail": "incorrect email or password",
            "code": "invalid_credentials",
            "retryable": False,
        }
    )


async def test_change_password_revokes_every_older_session(accounts_server: LiveServer) -> None:
    email, new = unique_email(), "another long passphrase"
    async with browser(accounts_server.url) as first, browser(accounts_server.url) as second:
        await first.post("/api/v1/auth/register", json={"email": email, "password": PASSWORD})
        await second.post(
            "/api/v1/auth/login/local", data={"username": email, "password": PASSWORD}
        )
        old_token = first.cookies["access_token"]
        wrong = await first.post(
            "/api/v1/auth/change-password",
            json={"current_password": "nope nope nope", "new_password": new},
        )
        assert (wrong.status_code, wrong.json()["code"]) == (401, "invalid_credentials")
        changed = await first.post(
            "/api/v1/auth/change-password",
            json={"current_password": PASSWORD, "new_password": new},
        )
        assert changed.json() == {"message": "Password changed successfully"}
        assert first.cookies["access_token"] != old_token
        assert (await first.get("/api/v1/auth/me")).status_code == 200
        # the other browser's session, and the old token, stopped working
        assert (await second.get("/api/v1/auth/me")).status_code == 401
    stale = await request(
        "GET", f"{accounts_server.url}/threads/search", cookies={"access_token": old_token}
    )
    assert stale.status_code == 401
    login = await request(
        "POST",
        f"{accounts_server.url}/api/v1/auth/login/local",
        data={"username": email, "password": new},
    )
    assert login.status_code == 200


async def test_forged_and_garbage_tokens_are_401(accounts_server: LiveServer) -> None:
    import jwt

    url = f"{accounts_server.url}/threads/search"
    forged = jwt.encode(
        {"sub": "x", "sid": "y", "ver": 0, "typ": "fawn-session", "exp": 4102444800},
        "not the server's secret but long enough to be a key",
        algorithm="HS256",
    )
    for token in ("garbage", forged, "fk_AAAAAAAAAAAAAAAA_" + "A" * 43):
        for headers, cookies in (
            ({"Authorization": f"Bearer {token}"}, {}),
            ({"x-api-key": token}, {}),
            ({}, {"access_token": token}),
        ):
            response = await request("POST", url, json={}, headers=headers, cookies=cookies)
            assert response.status_code == 401, (token, headers, cookies)
            assert response.headers["www-authenticate"] == 'Bearer realm="fawn"'


async def test_public_paths_need_no_credential(accounts_server: LiveServer) -> None:
    url = accounts_server.url
    assert (await request("GET", f"{url}/ok")).status_code == 200
    assert (await request("GET", f"{url}/openapi.json")).status_code == 200
    assert (await request("GET", f"{url}/api/v1/auth/providers")).json() == {"providers": []}
    for path in ("/threads/search", "/api/models", "/assistants/search", "/api/v1/auth/me"):
        method = "GET" if path.endswith(("models", "me")) else "POST"
        response = await request(method, url + path, json={})
        assert (response.status_code, response.json()["code"]) == (401, "not_authenticated")
