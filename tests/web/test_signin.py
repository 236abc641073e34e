"""The page against a server with accounts (``auth.mode: local``): nothing shows before
signing in, a wrong password is told, and a signed-in user chats, sees only their threads and
stays signed in across a reload (the session cookie, with the CSRF token echoed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.auth.parties import PASSWORD, accounts_auth, unique_email
from tests.conftest import base_config
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.web.test_page import open_page, send, wait_status


@pytest.fixture(scope="module")
def accounts_web_server(
    stub: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("web-accounts")
    config = base_config(stub, workdir / "data", auth=accounts_auth())
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


def _account(server: LiveServer) -> str:
    """A user with the test password (the first one becomes the admin)."""
    email = unique_email()
    setup = httpx.get(f"{server.url}/api/v1/auth/setup-status").json()
    route = "initialize" if setup.get("needs_setup") else "register"
    response = httpx.post(
        f"{server.url}/api/v1/auth/{route}", json={"email": email, "password": PASSWORD}
    )
    assert response.status_code == 201, response.text
    return email


def _thread_of(server: LiveServer, email: str) -> None:
    """A thread owned by ``email``'s account, made through the API with its session."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        login = http.post(
            "/api/v1/auth/login/local", data={"username": email, "password": PASSWORD}
        )
        assert login.status_code == 200, login.text
        token = http.cookies["csrf_token"]
        created = http.post("/threads", json={}, headers={"X-CSRF-Token": token})
        assert created.status_code == 200, created.text


def _sign_in(page: Page, email: str, password: str) -> None:
    page.get_by_label("Email or user name").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_signing_in_then_chatting_and_staying_signed_in(
    page: Page, accounts_web_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    server = accounts_web_server
    _thread_of(server, _account(server))  # someone else's: the page must never show it
    email = _account(server)
    stub.add_script(key, ["signed-in answer"])

    open_page(page, server)
    dialog = page.locator("#signin")
    expect(dialog).to_be_visible()
    expect(page.locator("#thread-list li")).to_have_count(0)

    _sign_in(page, email, "not the password")
    expect(page.locator("#signin-error")).to_be_visible()
    expect(dialog).to_be_visible()

    _sign_in(page, email, PASSWORD)
    expect(dialog).to_be_hidden()
    send(page, f"{key} hello")
    expect(page.locator(".msg.ai .body").last).to_have_text("signed-in answer")
    wait_status(page, "idle")
    expect(page.locator("#thread-list li")).to_have_count(1)

    page.reload()
    page.wait_for_selector("html[data-ready=true]", state="attached")
    expect(dialog).to_be_hidden()
    expect(page.locator("#thread-list li")).to_have_count(1)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["access_token"]["httpOnly"] is True
    assert cookies["csrf_token"]["httpOnly"] is False
