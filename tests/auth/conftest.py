"""Servers with accounts (``auth.mode: local``) on both backends, and the people using them:
two users and an admin, each with a browser session, an API key and an SDK client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.auth.parties import PASSWORD, Party, accounts_auth, sign_in, sign_up, unique_email
from tests.conftest import BACKENDS, base_config
from tests.support.live import LiveServer

#: A browser origin the shared server allows besides its own.
ALLOWED_ORIGIN = "http://localhost:3000"


@pytest.fixture(scope="session", params=BACKENDS)
def accounts_server(
    request: pytest.FixtureRequest, stub: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One server with accounts per backend, its first admin already created."""
    backend: str = request.param
    workdir = tmp_path_factory.mktemp(f"accounts-{backend}")
    # tests share the server and all come from 127.0.0.1: the sign-in limit is tested on
    # servers of its own
    extra: dict[str, Any] = {
        "auth": accounts_auth(login_rate_limit={"max_failures": 10_000}),
        "server": {"cors_origins": [ALLOWED_ORIGIN]},
    }
    if backend == "postgres":
        extra["database"] = {"url": request.getfixturevalue("pg_url")}
    live = LiveServer(base_config(stub, workdir / "data", **extra), workdir).start()
    live.admin_email = unique_email("admin")  # type: ignore[attr-defined]
    response = httpx.post(
        f"{live.url}/api/v1/auth/initialize",
        json={"email": live.admin_email, "password": PASSWORD},  # type: ignore[attr-defined]
    )
    assert response.status_code == 201, response.text
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
async def people(accounts_server: LiveServer) -> AsyncIterator[tuple[Party, Party, Party]]:
    """``(alice, bob, admin)``: two fresh users and the server's admin."""
    url = accounts_server.url
    alice = await sign_up(url)
    bob = await sign_up(url)
    admin = await sign_in(url, accounts_server.admin_email)  # type: ignore[attr-defined]
    try:
        yield alice, bob, admin
    finally:
        for party in (alice, bob, admin):
            await party.aclose()


@pytest.fixture
def make_auth_server(stub: Any, tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """A dedicated server with ``auth`` settings of the test's choosing."""
    started: list[LiveServer] = []

    def make(
        auth: dict[str, Any] | None = None, data_dir: Path | None = None, **overrides: Any
    ) -> LiveServer:
        workdir = tmp_path / f"srv{len(started)}"
        data = data_dir or workdir / "data"
        config = base_config(stub, data, auth=auth or accounts_auth(), **overrides)
        live = LiveServer(config, workdir).start()
        started.append(live)
        return live

    try:
        yield make
    finally:
        for live in started:
            live.stop()
