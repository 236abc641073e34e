"""Cross-site request forgery: what a page of another site can make a browser send without a
CORS preflight (forms, ``text/plain``, no body type) is refused unless its origin is this
server or one of ``server.cors_origins``. Before, any web page could upload into a thread
whose id it knew. Clients that are not browsers send no ``Origin`` and keep working."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.security.edge_helpers import new_thread
from tests.support.live import LiveServer
from tests.support.problems import problem

EVIL = "http://evil.example"
APP = "http://app.example:3000"


def refused(header: str, value: str) -> dict[str, Any]:
    return problem(
        f"cross-site request refused: {header} {value!r} is neither this server nor one of "
        "server.cors_origins (forms, text/plain and body-less requests from other sites' "
        "pages are not accepted)",
        "cross_site_request",
    )


@pytest.fixture
def app_server(make_server: Callable[..., LiveServer]) -> LiveServer:
    return make_server(server={"cors_origins": [APP]})


async def _uploads(http: httpx.AsyncClient, tid: str) -> list[str]:
    listed = await http.get(f"/api/threads/{tid}/uploads")
    return [f["filename"] for f in listed.json()["files"]]


@pytest.mark.parametrize(
    ("headers", "header", "value"),
    [
        ({"origin": EVIL}, "Origin", EVIL),
        ({"origin": "null"}, "Origin", "null"),
        ({"referer": f"{EVIL}/page.html"}, "Referer", f"{EVIL}/page.html"),
        # a different port is a different origin
        ({"origin": "http://127.0.0.1:1"}, "Origin", "http://127.0.0.1:1"),
    ],
)
async def test_a_cross_site_upload_is_refused_and_nothing_stored(
    server: LiveServer, headers: dict[str, str], header: str, value: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        response = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("planted.txt", b"gotcha"))],
            headers=headers,
        )
        assert (response.status_code, response.json()) == (403, refused(header, value))
        assert await _uploads(http, tid) == []


@pytest.mark.parametrize(
    ("method", "path", "content_type", "content"),
    [
        ("POST", "/threads", "text/plain", b'{"metadata": {}}'),
        ("POST", "/threads", "application/x-www-form-urlencoded", b"metadata=1"),
        ("POST", "/threads/{tid}/copy", None, b""),
        ("DELETE", "/threads/{tid}", None, b""),
        ("PATCH", "/threads/{tid}", "text/plain", b'{"metadata": {"owned": true}}'),
        ("DELETE", "/api/threads/{tid}/uploads/a.txt", None, b""),
    ],
)
async def test_simple_cross_site_requests_are_refused(
    server: LiveServer, method: str, path: str, content_type: str | None, content: bytes
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        before = (await http.post("/threads/count", json={})).json()
        headers = {"origin": EVIL}
        if content_type is not None:
            headers["content-type"] = content_type
        response = await http.request(
            method, path.format(tid=thread["thread_id"]), content=content, headers=headers
        )
        assert (response.status_code, response.json()) == (403, refused("Origin", EVIL))
        assert (await http.get(f"/threads/{thread['thread_id']}")).json() == thread
        assert (await http.post("/threads/count", json={})).json() == before


async def test_same_origin_pages_and_non_browser_clients_go_through(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        same = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("same.txt", b"1"))],
            headers={"origin": server.url},
        )
        by_referer = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("referer.txt", b"2"))],
            headers={"referer": f"{server.url}/index.html"},
        )
        no_origin = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("curl.txt", b"3"))]
        )
        assert [same.status_code, by_referer.status_code, no_origin.status_code] == [200] * 3
        assert sorted(await _uploads(http, tid)) == ["curl.txt", "referer.txt", "same.txt"]


async def test_json_requests_are_left_to_cors(server: LiveServer) -> None:
    """A browser preflights a JSON request and CORS refuses unknown origins; the origin
    check is for what a browser sends without asking."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/threads", json={}, headers={"origin": EVIL})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


async def test_a_configured_origin_may_upload_and_delete(app_server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=app_server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        upload = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("app.txt", b"1"))],
            headers={"origin": APP},
        )
        assert upload.status_code == 200, upload.text
        assert upload.headers["access-control-allow-origin"] == APP
        evil = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("evil.txt", b"1"))],
            headers={"origin": EVIL},
        )
        assert (evil.status_code, evil.json()) == (403, refused("Origin", EVIL))
        assert "access-control-allow-origin" not in evil.headers
        deleted = await http.delete(f"/threads/{tid}", headers={"origin": APP})
        assert deleted.status_code == 204


async def test_the_sdk_keeps_working(server: LiveServer) -> None:
    client = get_client(url=server.url)
    try:
        thread = await client.threads.create(metadata={"via": "sdk"})
        await client.threads.update(thread["thread_id"], metadata={"x": 1})
        copy = await client.threads.copy(thread["thread_id"])
        await client.threads.delete(copy["thread_id"])
        await client.threads.delete(thread["thread_id"])
    finally:
        await client.aclose()
