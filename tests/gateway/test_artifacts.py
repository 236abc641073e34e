"""``GET /api/threads/{id}/artifacts/{path}``: bytes, types, ranges, attachments, containment."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.live import LiveServer
from tests.support.problems import problem

PAYLOAD = bytes(range(256)) * 10
SECRET_MARKERS = (b"root:", b"sk-test-secret")


async def new_thread(http: httpx.AsyncClient) -> str:
    response = await http.post("/threads", json={})
    assert response.status_code == 200
    thread_id: str = response.json()["thread_id"]
    return thread_id


def user_data(server: LiveServer, thread_id: str, mount: str = "outputs") -> Path:
    directory = server.data_dir / "threads" / thread_id / "user-data" / mount
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def artifact_url(thread_id: str, name: str, mount: str = "outputs") -> str:
    return f"/api/threads/{thread_id}/artifacts/mnt/user-data/{mount}/{name}"


async def raw_get(base_url: str, target: str) -> tuple[int, bytes]:
    """GET with the request target sent exactly as given (httpx folds ``..`` segments)."""
    parts = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(
            f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = response.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def test_download_with_type_and_headers(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / "report.md").write_text("# Report\n\nAll good.\n")
        (user_data(server, tid) / "data.bin").write_bytes(PAYLOAD)
        (user_data(server, tid) / "résumé 1.txt").write_text("cv")
        markdown = await http.get(artifact_url(tid, "report.md"))
        binary = await http.get(artifact_url(tid, "data.bin"))
        unicode_name = await http.get(artifact_url(tid, "résumé 1.txt"))
        forced = await http.get(artifact_url(tid, "report.md"), params={"download": "true"})

    assert (markdown.status_code, markdown.content) == (200, b"# Report\n\nAll good.\n")
    headers = dict(markdown.headers)
    assert headers.pop("etag").startswith('"')
    assert headers.pop("last-modified").endswith(" GMT")
    headers.pop("date")
    headers.pop("server")
    assert headers == {
        "accept-ranges": "bytes",
        "content-disposition": 'inline; filename="report.md"',
        "content-length": "20",
        "content-type": "text/markdown; charset=utf-8",
        "x-content-type-options": "nosniff",
    }
    assert (binary.status_code, binary.content) == (200, PAYLOAD)
    assert binary.headers["content-type"] == "application/octet-stream"
    assert unicode_name.content == b"cv"
    assert unicode_name.headers["content-disposition"] == (
        "inline; filename*=utf-8''r%C3%A9sum%C3%A9%201.txt"
    )
    assert forced.content == markdown.content
    assert forced.headers["content-disposition"] == 'attachment; filename="report.md"'


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("notes.md", "text/markdown; charset=utf-8"),
        ("config.yaml", "application/yaml"),
        ("main.rs", "text/plain; charset=utf-8"),
        ("chart.png", "image/png"),
        ("table.csv.gz", "application/gzip"),
        ("no-extension", "application/octet-stream"),
    ],
)
async def test_content_types_do_not_depend_on_the_host(
    server: LiveServer, name: str, content_type: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / name).write_bytes(b"bytes")
        response = await http.get(artifact_url(tid, name))
    assert (response.status_code, response.content) == (200, b"bytes")
    assert response.headers["content-type"] == content_type
    assert response.headers["content-disposition"] == f'inline; filename="{name}"'


async def test_uploads_and_workspace_are_downloadable_too(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        upload = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("in.csv", b"a,b\n"))]
        )
        assert upload.status_code == 200
        (user_data(server, tid, "workspace") / "nested" / "deep").mkdir(parents=True)
        (user_data(server, tid, "workspace") / "nested" / "deep" / "w.json").write_text("{}")
        uploaded = await http.get(artifact_url(tid, "in.csv", "uploads"))
        nested = await http.get(artifact_url(tid, "nested/deep/w.json", "workspace"))
    assert (uploaded.status_code, uploaded.content) == (200, b"a,b\n")
    assert uploaded.headers["content-type"] == "text/csv; charset=utf-8"
    assert (nested.status_code, nested.content) == (200, b"{}")
    assert nested.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("page.html", "text/html; charset=utf-8"),
        ("page.htm", "text/html; charset=utf-8"),
        ("drawing.svg", "image/svg+xml"),
        ("page.xhtml", "application/xhtml+xml"),
        ("feed.xml", "text/xml; charset=utf-8"),
        ("SHOUT.HTML", "text/html; charset=utf-8"),
    ],
)
async def test_documents_that_could_run_script_are_attachments(
    server: LiveServer, name: str, content_type: str
) -> None:
    script = b"<html><script>alert(document.cookie)</script></html>"
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / name).write_bytes(script)
        response = await http.get(artifact_url(tid, name))
    assert (response.status_code, response.content) == (200, script)
    assert response.headers["content-type"] == content_type
    assert response.headers["content-disposition"] == f'attachment; filename="{name}"'
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("range_header", "status", "expected", "content_range"),
    [
        ("bytes=10-19", 206, PAYLOAD[10:20], "bytes 10-19/2560"),
        ("bytes=2550-", 206, PAYLOAD[2550:], "bytes 2550-2559/2560"),
        ("bytes=-5", 206, PAYLOAD[-5:], "bytes 2555-2559/2560"),
        ("bytes=-99999", 206, PAYLOAD, "bytes 0-2559/2560"),
        ("bytes=2500-99999", 206, PAYLOAD[2500:], "bytes 2500-2559/2560"),
        ("bytes=0-0", 206, PAYLOAD[:1], "bytes 0-0/2560"),
        ("bytes=0-1,5-6", 200, PAYLOAD, None),
        ("bytes=20-10", 200, PAYLOAD, None),
        ("items=0-5", 200, PAYLOAD, None),
        ("bytes=abc", 200, PAYLOAD, None),
    ],
)
async def test_range_requests(
    server: LiveServer,
    range_header: str,
    status: int,
    expected: bytes,
    content_range: str | None,
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / "data.bin").write_bytes(PAYLOAD)
        response = await http.get(artifact_url(tid, "data.bin"), headers={"range": range_header})
    assert (response.status_code, response.content) == (status, expected)
    assert response.headers.get("content-range") == content_range
    assert response.headers["content-length"] == str(len(expected))


@pytest.mark.parametrize("range_header", ["bytes=2560-", "bytes=9999-10000", "bytes=-0"])
async def test_unsatisfiable_range_is_416(server: LiveServer, range_header: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / "data.bin").write_bytes(PAYLOAD)
        response = await http.get(artifact_url(tid, "data.bin"), headers={"range": range_header})
    assert (response.status_code, response.json()) == (
        416,
        problem("range not satisfiable: the file has 2560 bytes", "range_not_satisfiable"),
    )
    assert response.headers["content-range"] == "bytes */2560"


async def test_if_range_sends_the_whole_file_once_it_changed(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        (user_data(server, tid) / "data.bin").write_bytes(PAYLOAD)
        first = await http.get(artifact_url(tid, "data.bin"))
        etag = first.headers["etag"]
        same = await http.get(
            artifact_url(tid, "data.bin"), headers={"range": "bytes=0-3", "if-range": etag}
        )
        stale = await http.get(
            artifact_url(tid, "data.bin"), headers={"range": "bytes=0-3", "if-range": '"old"'}
        )
    assert (same.status_code, same.content) == (206, PAYLOAD[:4])
    assert (stale.status_code, stale.content) == (200, PAYLOAD)


async def test_missing_and_non_files_are_404(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        outputs = user_data(server, tid)
        (outputs / "folder").mkdir()
        (outputs / "file.txt").write_text("x")
        os.mkfifo(outputs / "pipe")
        responses = {
            target: await http.get(f"/api/threads/{tid}/artifacts/{target}")
            for target in (
                "mnt/user-data/outputs/nope.txt",
                "mnt/user-data/outputs/folder",
                "mnt/user-data/outputs",
                "mnt/user-data/outputs/file.txt/inner",
                "mnt/user-data/outputs/pipe",
            )
        }
    assert {target: (r.status_code, r.json()) for target, r in responses.items()} == {
        "mnt/user-data/outputs/nope.txt": (
            404,
            problem("/mnt/user-data/outputs/nope.txt does not exist", "file_not_found"),
        ),
        "mnt/user-data/outputs/folder": (
            404,
            problem("/mnt/user-data/outputs/folder is not a regular file", "file_not_found"),
        ),
        "mnt/user-data/outputs": (
            404,
            problem("/mnt/user-data/outputs is a directory, not a file", "file_not_found"),
        ),
        "mnt/user-data/outputs/file.txt/inner": (
            404,
            problem("/mnt/user-data/outputs/file.txt/inner does not exist", "file_not_found"),
        ),
        "mnt/user-data/outputs/pipe": (
            404,
            problem("/mnt/user-data/outputs/pipe is not a regular file", "file_not_found"),
        ),
    }


FORBIDDEN = problem(
    "the path leaves the thread's files; artifacts must be under "
    "/mnt/user-data/workspace, /mnt/user-data/uploads or /mnt/user-data/outputs",
    "forbidden_path",
)
NOT_SERVED = problem(
    "the path is not a file of the thread; artifacts must be under "
    "/mnt/user-data/workspace, /mnt/user-data/uploads or /mnt/user-data/outputs",
    "forbidden_path",
)


async def test_paths_leaving_user_data_are_403_without_the_bytes(
    server: LiveServer, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_bytes(b"root:sk-test-secret")
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        other = await new_thread(http)
        (user_data(server, other) / "theirs.txt").write_text("thread B's file")
        outputs = user_data(server, tid)
        (outputs / "passwd").symlink_to("/etc/passwd")
        (outputs / "secret.txt").symlink_to(secret)
        (outputs / "etc").symlink_to("/etc")
        (outputs / "up").symlink_to("..")
        (outputs / "other").symlink_to(user_data(server, other))
        host_outputs = str(outputs).lstrip("/")
        encoded = [
            "mnt/user-data/outputs/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
            "mnt/user-data/outputs/..%2f..%2f..%2f..%2fetc%2fpasswd",
            "mnt/user-data/outputs/%2E%2E%2F%2E%2E%2F%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
            f"mnt/user-data/outputs/%2e%2e/%2e%2e/%2e%2e/threads/{other}/user-data/outputs/theirs.txt",
            "etc/passwd",
            f"{host_outputs}/theirs.txt",
            "mnt/user-data/outputs/passwd",
            "mnt/user-data/outputs/secret.txt",
            "mnt/user-data/outputs/etc/passwd",
            "mnt/user-data/outputs/up/workspace/x",
            "mnt/user-data/outputs/other/theirs.txt",
            "mnt/user-data/outputs/%00passwd",
            "mnt/skills/x/SKILL.md",
        ]
        responses = [await http.get(f"/api/threads/{tid}/artifacts/{t}") for t in encoded]
        user_data_root = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data")
    raw = [
        await raw_get(server.url, f"/api/threads/{tid}/artifacts/{target}")
        for target in (
            "mnt/user-data/outputs/../../../../etc/passwd",
            "mnt/user-data/outputs/../../../../../../../../../../etc/passwd",
            f"mnt/user-data/outputs/../../../threads/{other}/user-data/outputs/theirs.txt",
        )
    ]
    assert [(r.status_code, r.json()) for r in responses] == [(403, FORBIDDEN)] * len(encoded)
    assert (user_data_root.status_code, user_data_root.json()) == (403, NOT_SERVED)
    assert [status for status, _ in raw] == [403] * 3
    for body in [r.content for r in responses] + [body for _, body in raw]:
        assert not any(marker in body for marker in SECRET_MARKERS)
        assert b"thread B" not in body
