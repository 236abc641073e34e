"""The ``Host`` allowlist: a DNS-rebinding page reaches the server with its own name in
``Host`` and is refused before anything runs. Before, any ``Host`` was served."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.security.edge_helpers import threads_with
from tests.support.live import LiveServer
from tests.support.problems import problem


def refused(host: str) -> dict[str, object]:
    return problem(
        f"Host {host!r} is not a name of this server; "
        "add the name to server.allowed_hosts to serve it",
        "host_not_allowed",
    )


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example"])
async def test_a_foreign_host_is_refused_and_nothing_runs(server: LiveServer, host: str) -> None:
    host = host.format(port=server.port)
    marker = uuid.uuid4().hex
    async with httpx.AsyncClient(base_url=server.url) as http:
        read = await http.get("/threads/search", headers={"host": host})
        # what a rebinding page would send: its own origin, its own name
        write = await http.post(
            "/threads",
            json={"metadata": {"m": marker}},
            headers={"host": host, "origin": f"http://{host}"},
        )
        assert (read.status_code, read.json()) == (400, refused(host))
        assert (write.status_code, write.json()) == (400, refused(host))
        assert await threads_with(http, {"m": marker}) == []


@pytest.mark.parametrize(
    "host", ["localhost:{port}", "LocalHost", "127.0.0.1:{port}", "127.0.0.1", "[::1]:{port}"]
)
async def test_the_loopback_names_are_served(server: LiveServer, host: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get("/ok", headers={"host": host.format(port=server.port)})
    assert (response.status_code, response.json()) == (200, {"ok": True})


async def test_a_request_without_host_is_refused(server: LiveServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"GET /ok HTTP/1.0\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), timeout=60)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert body == (
        b'{"detail":"no Host header is not a name of this server; add the name to '
        b'server.allowed_hosts to serve it","code":"host_not_allowed","retryable":false}'
    )


async def test_configured_names_are_served(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(server={"allowed_hosts": ["fawn.internal", "*.example.org"]})
    async with httpx.AsyncClient(base_url=live.url) as http:
        statuses = {
            host: (await http.get("/ok", headers={"host": host})).status_code
            for host in (
                "fawn.internal",
                "FAWN.internal:8443",
                "a.example.org",
                "b.c.example.org:1",
                "example.org",
                "fawn.internal.evil",
                "localhost",
            )
        }
    assert statuses == {
        "fawn.internal": 200,
        "FAWN.internal:8443": 200,
        "a.example.org": 200,
        "b.c.example.org:1": 200,
        "example.org": 400,
        "fawn.internal.evil": 400,
        "localhost": 200,
    }


async def test_a_wildcard_serves_any_name(make_server: Callable[..., LiveServer]) -> None:
    live = make_server(server={"allowed_hosts": ["*"]})
    async with httpx.AsyncClient(base_url=live.url) as http:
        response = await http.get("/ok", headers={"host": "anything.example"})
    assert response.status_code == 200
