"""Request bodies at the edge: size (413 naming the limit and its key, counted as the bytes
arrive), kind (JSON, or multipart on the upload route only; anything else 415), and nothing
stored when a body is refused.

Before, a 200 MB JSON body was accepted and stored, and the server's memory grew by 1 GB and
stayed there.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import base_config
from tests.security.edge_helpers import new_thread, threads_with
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.problems import problem

SMALL = 4096
TOO_LARGE = problem(
    f"the request body exceeds the limit of {SMALL} bytes (server.max_body_bytes)",
    "request_too_large",
)


@pytest.fixture(scope="module")
def small_server(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("small-bodies")
    config = base_config(
        stub,
        workdir / "data",
        server={"max_body_bytes": SMALL},
        uploads={"max_file_bytes": 3 * SMALL},
    )
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


def _padded_thread_body(marker: str, size: int) -> bytes:
    head = f'{{"metadata": {{"m": "{marker}", "pad": "'.encode()
    tail = b'"}}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


async def test_a_body_at_the_limit_is_accepted(small_server: LiveServer) -> None:
    marker = uuid.uuid4().hex
    body = _padded_thread_body(marker, SMALL)
    async with httpx.AsyncClient(base_url=small_server.url) as http:
        response = await http.post(
            "/threads", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 200, response.text
        assert [t["thread_id"] for t in await threads_with(http, {"m": marker})] == [
            response.json()["thread_id"]
        ]


async def test_a_declared_length_over_the_limit_is_refused_and_nothing_stored(
    small_server: LiveServer,
) -> None:
    marker = uuid.uuid4().hex
    async with httpx.AsyncClient(base_url=small_server.url) as http:
        response = await http.post(
            "/threads",
            content=_padded_thread_body(marker, SMALL + 1),
            headers={"content-type": "application/json"},
        )
        assert (response.status_code, response.json()) == (413, TOO_LARGE)
        assert await threads_with(http, {"m": marker}) == []


async def test_a_chunked_body_is_counted_as_it_arrives(small_server: LiveServer) -> None:
    marker = uuid.uuid4().hex
    body = _padded_thread_body(marker, 3 * SMALL)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    async with httpx.AsyncClient(base_url=small_server.url) as http:
        response = await http.post(
            "/threads", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in response.request.headers
        assert (response.status_code, response.json()) == (413, TOO_LARGE)
        assert await threads_with(http, {"m": marker}) == []


async def test_the_limit_applies_to_run_bodies_too(small_server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=small_server.url) as http:
        thread = await new_thread(http)
        tid = thread["thread_id"]
        text = "y" * SMALL
        response = await http.post(
            f"/threads/{tid}/runs",
            json={"assistant_id": "lead_agent", "input": {"messages": [text]}},
        )
        assert (response.status_code, response.json()) == (413, TOO_LARGE)
        assert (await http.get(f"/threads/{tid}/runs")).json() == []


async def test_uploads_keep_their_own_per_file_limit(small_server: LiveServer) -> None:
    """A multipart upload larger than ``server.max_body_bytes`` is the upload route's to judge:
    within ``uploads.max_file_bytes`` it is stored, past it refused."""
    async with httpx.AsyncClient(base_url=small_server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        fits = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("a.bin", b"a" * 2 * SMALL))]
        )
        too_big = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("b.bin", b"b" * 4 * SMALL))]
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert fits.status_code == 200, fits.text
    assert too_big.status_code == 413
    assert too_big.json()["code"] == "upload_too_large"
    assert [f["filename"] for f in listed.json()["files"]] == ["a.bin"]


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        (
            [f"X-Pad-{i}: {'p' * 3000}" for i in range(6)],
            "a multipart part's headers exceed 16384 bytes",
        ),
        ([f"X-Padding: {'p' * 20_000}"], "the request body is not valid multipart/form-data"),
    ],
)
async def test_multipart_part_headers_are_bounded(
    small_server: LiveServer, headers: list[str], detail: str
) -> None:
    boundary = "edge-boundary"
    lines = "".join(f"{h}\r\n" for h in headers)
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="files"; filename="a.txt"\r\n'
        f"{lines}\r\ndata\r\n--{boundary}--\r\n"
    ).encode()
    async with httpx.AsyncClient(base_url=small_server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        response = await http.post(
            f"/api/threads/{tid}/uploads",
            content=body,
            headers={"content-type": f"multipart/form-data; boundary={boundary}"},
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
    assert listed.json() == {"files": [], "count": 0}


@pytest.mark.parametrize(
    ("content_type", "detail"),
    [
        (
            "text/plain",
            "unsupported Content-Type text/plain: request bodies are JSON (application/json)",
        ),
        (
            "application/x-www-form-urlencoded",
            "unsupported Content-Type application/x-www-form-urlencoded: "
            "request bodies are JSON (application/json)",
        ),
        (
            "multipart/form-data; boundary=x",
            "POST /threads does not take multipart/form-data: send JSON as application/json "
            "(files go to POST /api/threads/{id}/uploads)",
        ),
        (None, "the request has a body but no Content-Type: send JSON as application/json"),
    ],
)
async def test_a_json_route_takes_only_json(
    server: LiveServer, content_type: str | None, detail: str
) -> None:
    """A JSON document sent as text/plain (what a cross-site page can send without a
    preflight) never reaches a JSON route."""
    marker = uuid.uuid4().hex
    headers = {} if content_type is None else {"content-type": content_type}
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(
            "/threads", content=f'{{"metadata": {{"m": "{marker}"}}}}', headers=headers
        )
        assert (response.status_code, response.json()) == (
            415,
            problem(detail, "unsupported_media_type"),
        )
        assert await threads_with(http, {"m": marker}) == []


async def test_json_media_type_variants_are_json(server: LiveServer) -> None:
    marker = uuid.uuid4().hex
    async with httpx.AsyncClient(base_url=server.url) as http:
        for content_type in ("Application/JSON; charset=utf-8", "application/merge-patch+json"):
            response = await http.post(
                "/threads",
                content=f'{{"metadata": {{"m": "{marker}"}}}}',
                headers={"content-type": content_type},
            )
            assert response.status_code == 200, response.text
        assert len(await threads_with(http, {"m": marker})) == 2


async def test_a_200_mb_body_is_refused_early_and_memory_stays_flat(
    make_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    """Streamed without a length, the body is refused once the default limit (10 MiB) is
    passed; the server neither reads nor keeps the rest."""
    live = make_server()
    before = _peak_rss_bytes(live.pid)
    chunk = b'"' + b"z" * (1024 * 1024 - 3) + b'",'
    total = 200 * 1024 * 1024
    reader, writer = await asyncio.open_connection("127.0.0.1", live.port)
    writer.write(
        b"POST /threads/search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    sent = 0
    answer = asyncio.ensure_future(reader.read(65536))
    try:
        writer.write(b"1\r\n[\r\n")
        while sent < total and not answer.done():
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
            try:
                await writer.drain()
            except ConnectionError:
                break
        head = await asyncio.wait_for(answer, timeout=60)
        while b"\r\n\r\n" not in head or head.endswith(b"\r\n\r\n"):
            more = await asyncio.wait_for(reader.read(65536), timeout=60)
            if not more:
                break
            head += more
    finally:
        writer.close()
    assert head.startswith(b"HTTP/1.1 413 "), head[:200]
    assert b'"code":"request_too_large"' in head
    assert sent < total  # it was refused before the client finished
    grown = _peak_rss_bytes(live.pid) - before
    assert grown < 64 * 1024 * 1024, f"peak RSS grew by {grown / 2**20:.0f} MiB"
    async with httpx.AsyncClient(base_url=live.url) as http:
        assert (await http.get("/ok")).status_code == 200


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")
