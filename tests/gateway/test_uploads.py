"""``/api/threads/{id}/uploads``: multipart uploads, listing, deletion, limits, unsafe names."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import base_config
from tests.runs.runs_helpers import pattern
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.problems import problem

BOUNDARY = "fawn-test-boundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


def multipart(*parts: tuple[str, bytes | None, bytes], end: bool = True) -> bytes:
    """A multipart body built by hand, so names reach the server byte for byte.

    Each part is ``(field, filename or None for a plain field, data)``.
    """
    body = b""
    for field, filename, data in parts:
        disposition = f'form-data; name="{field}"'.encode()
        if filename is not None:
            disposition += b'; filename="' + filename + b'"'
        body += f"--{BOUNDARY}\r\n".encode() + b"Content-Disposition: " + disposition + b"\r\n"
        body += b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n"
    if end:
        body += f"--{BOUNDARY}--\r\n".encode()
    return body


async def new_thread(http: httpx.AsyncClient) -> str:
    response = await http.post("/threads", json={})
    assert response.status_code == 200
    thread_id: str = response.json()["thread_id"]
    return thread_id


def uploads_dir(server: LiveServer, thread_id: str) -> Path:
    return server.data_dir / "threads" / thread_id / "user-data" / "uploads"


def entry(name: str, size: int) -> dict[str, object]:
    """An upload as the routes answer it (DeerFlow's app reads ``virtual_path`` and
    ``artifact_url``)."""
    url = rf"/api/threads/[A-Za-z0-9_-]+/artifacts/mnt/user-data/uploads/{re.escape(name)}"
    return {
        "filename": name,
        "size": size,
        "path": f"/mnt/user-data/uploads/{name}",
        "extension": os.path.splitext(name)[1].lower(),
        "virtual_path": f"/mnt/user-data/uploads/{name}",
        "artifact_url": pattern(url, f"<artifact url of {name}>"),
    }


async def test_upload_list_and_delete(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        one = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("notes.txt", b"hello", "text/plain"))],
        )
        several = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[
                ("files", ("data.csv", b"a,b\n1,2\n", "text/csv")),
                ("files", ("image.png", b"\x89PNG\r\n\x1a\n", "image/png")),
                ("files", ("README", b"", "application/octet-stream")),
                ("files", ("SCAN.PDF", b"%PDF", "application/pdf")),
            ],
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
        deleted = await http.delete(f"/api/threads/{tid}/uploads/data.csv")
        deleted_again = await http.delete(f"/api/threads/{tid}/uploads/data.csv")
        after = await http.get(f"/api/threads/{tid}/uploads")

    assert (one.status_code, one.json()) == (
        200,
        {
            "success": True,
            "files": [entry("notes.txt", 5)],
            "message": "Successfully uploaded 1 file(s)",
            "skipped_files": [],
        },
    )
    assert (several.status_code, several.json()) == (
        200,
        {
            "success": True,
            "files": [
                entry("data.csv", 8),
                entry("image.png", 8),
                entry("README", 0),
                entry("SCAN.PDF", 4),
            ],
            "message": "Successfully uploaded 4 file(s)",
            "skipped_files": [],
        },
    )
    assert (listed.status_code, listed.json()) == (
        200,
        {
            "files": [
                entry("README", 0),
                entry("SCAN.PDF", 4),
                entry("data.csv", 8),
                entry("image.png", 8),
                entry("notes.txt", 5),
            ],
            "count": 5,
        },
    )
    assert (deleted.status_code, deleted.json()) == (
        200,
        {"success": True, "message": "Deleted data.csv"},
    )
    assert (deleted_again.status_code, deleted_again.json()) == (
        404,
        problem("no upload named 'data.csv' in /mnt/user-data/uploads", "file_not_found"),
    )
    assert after.json() == {
        "files": [
            entry("README", 0),
            entry("SCAN.PDF", 4),
            entry("image.png", 8),
            entry("notes.txt", 5),
        ],
        "count": 4,
    }
    directory = uploads_dir(server, tid)
    assert sorted(os.listdir(directory)) == ["README", "SCAN.PDF", "image.png", "notes.txt"]
    assert (directory / "notes.txt").read_bytes() == b"hello"


async def test_listing_a_thread_without_uploads(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert (listed.status_code, listed.json()) == (200, {"files": [], "count": 0})


async def test_an_upload_replaces_a_file_of_the_same_name(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        for data in (b"first version", b"v2"):
            response = await http.post(
                f"/api/threads/{tid}/uploads", files=[("files", ("doc.md", data))]
            )
            assert response.status_code == 200
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert listed.json() == {"files": [entry("doc.md", 2)], "count": 1}
    assert (uploads_dir(server, tid) / "doc.md").read_bytes() == b"v2"


async def test_filenames_are_reduced_to_safe_base_names(server: LiveServer) -> None:
    body = multipart(
        ("files", b"../../etc/passwd", b"p"),
        ("files", b"a\\b.txt", b"bb"),
        ("files", b"C:\\Users\\me\\report.pdf", b"ccc"),
        ("files", b"na\x00me.txt", b"dddd"),
        ("files", b".bashrc", b"eeeee"),
        ("files", "résumé.txt".encode(), b"ffffff"),
    )
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        response = await http.post(
            f"/api/threads/{tid}/uploads", content=body, headers={"content-type": MULTIPART}
        )
    assert (response.status_code, response.json()) == (
        200,
        {
            "success": True,
            "files": [
                entry("passwd", 1),
                entry("b.txt", 2),
                entry("report.pdf", 3),
                entry("name.txt", 4),
                entry("bashrc", 5),
                entry("résumé.txt", 6),
            ],
            "message": "Successfully uploaded 6 file(s)",
            "skipped_files": [],
        },
    )
    thread_dir = server.data_dir / "threads" / tid
    assert sorted(os.listdir(uploads_dir(server, tid))) == sorted(
        ["passwd", "b.txt", "report.pdf", "name.txt", "bashrc", "résumé.txt"]
    )
    assert sorted(os.listdir(thread_dir)) == ["user-data"]
    assert sorted(os.listdir(thread_dir / "user-data")) == ["uploads"]


@pytest.mark.parametrize("name", [b"..", b".", b"", b"../..", b"/", b"\x00"])
async def test_a_name_that_reduces_to_nothing_is_422(server: LiveServer, name: bytes) -> None:
    body = multipart(("files", b"fine.txt", b"ok"), ("files", name, b"x"))
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        response = await http.post(
            f"/api/threads/{tid}/uploads", content=body, headers={"content-type": MULTIPART}
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
    shown = name.decode()
    assert (response.status_code, response.json()) == (
        422,
        problem(f"{shown!r} is not a usable file name", "invalid_filename"),
    )
    assert listed.json() == {"files": [], "count": 0}
    assert os.listdir(uploads_dir(server, tid)) == []


async def test_a_symlink_in_uploads_is_never_written_through_or_listed(
    server: LiveServer, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        first = await http.post(f"/api/threads/{tid}/uploads", files=[("files", ("ok.txt", b"1"))])
        assert first.status_code == 200
        (uploads_dir(server, tid) / "link.txt").symlink_to(victim)
        (uploads_dir(server, tid) / "etc").symlink_to("/etc")
        refused = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("new.txt", b"2")), ("files", ("link.txt", b"overwrite"))],
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
        delete_link = await http.delete(f"/api/threads/{tid}/uploads/link.txt")
    assert (refused.status_code, refused.json()) == (
        409,
        problem(
            "/mnt/user-data/uploads/link.txt exists as a symbolic link; "
            "refusing to replace it with an upload",
            "unsafe_upload_target",
        ),
    )
    assert listed.json() == {"files": [entry("ok.txt", 1)], "count": 1}
    assert delete_link.status_code == 404
    assert victim.read_text() == "do not touch"
    assert sorted(os.listdir(uploads_dir(server, tid))) == ["etc", "link.txt", "ok.txt"]


async def test_uploads_wait_for_a_thread_not_created_yet(server: LiveServer) -> None:
    """DeerFlow's app uploads a new chat's files before it creates the thread: they are kept
    for that thread (no thread is created); artifacts of a missing thread stay 404."""
    tid = str(uuid.uuid4())
    async with httpx.AsyncClient(base_url=server.url) as http:
        uploaded = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("a.txt", b"a"))]
        )
        spare = await http.post(f"/api/threads/{tid}/uploads", files=[("files", ("b.txt", b"b"))])
        removed = await http.delete(f"/api/threads/{tid}/uploads/b.txt")
        listed = await http.get(f"/api/threads/{tid}/uploads/list")
        limits = await http.get(f"/api/threads/{tid}/uploads/limits")
        missing = await http.get(f"/threads/{tid}")
        artifact = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/a.txt")
        created = await http.post("/threads", json={"thread_id": tid})
        after = await http.get(f"/api/threads/{tid}/uploads")
        bad = await http.post("/api/threads/no!/uploads", files=[("files", ("a.txt", b"a"))])
    assert uploaded.status_code == 200
    assert uploaded.json()["files"] == [entry("a.txt", 1)]
    assert (spare.status_code, removed.json()) == (
        200,
        {"success": True, "message": "Deleted b.txt"},
    )
    assert listed.json() == {"files": [entry("a.txt", 1)], "count": 1}
    assert limits.json() == {
        "max_files": 20,
        "max_file_size": 50 * 1024 * 1024,
        "max_total_size": 20 * 50 * 1024 * 1024,
    }
    assert (missing.status_code, artifact.status_code) == (404, 404)
    assert artifact.json() == problem(f"thread {tid} not found", "not_found")
    assert created.status_code == 200
    assert after.json() == {"files": [entry("a.txt", 1)], "count": 1}
    assert (bad.status_code, bad.json()["code"]) == (422, "invalid_input")


@pytest.mark.parametrize(
    ("content_type", "body", "detail"),
    [
        (
            "application/json",
            b"{}",
            "send the files as multipart/form-data, in parts named 'files'",
        ),
        (
            "multipart/form-data",
            b"",
            "send the files as multipart/form-data, in parts named 'files'",
        ),
        (MULTIPART, multipart(), "no files: send one or more parts named 'files'"),
        (
            MULTIPART,
            multipart(("file", b"a.txt", b"a")),
            "unexpected form field 'file': only files, in parts named 'files', are accepted",
        ),
        (
            MULTIPART,
            multipart(("files", b"a.txt", b"a"), ("note", None, b"hi")),
            "unexpected form field 'note': only files, in parts named 'files', are accepted",
        ),
        (
            MULTIPART,
            multipart(("files", b"a.txt", b"a"), end=False),
            "the multipart body ended before its closing boundary",
        ),
        (
            MULTIPART,
            b"garbage without any boundary",
            "the request body is not valid multipart/form-data",
        ),
    ],
    ids=["json", "no-boundary", "no-files", "wrong-field", "text-field", "truncated", "garbage"],
)
async def test_malformed_upload_requests_are_422(
    server: LiveServer, content_type: str, body: bytes, detail: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = await new_thread(http)
        response = await http.post(
            f"/api/threads/{tid}/uploads", content=body, headers={"content-type": content_type}
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
    assert listed.json() == {"files": [], "count": 0}


# -- limits (a server of its own) -----------------------------------------------------------


@pytest.fixture(scope="module")
def limited(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server-upload-limits")
    config = base_config(stub, workdir / "data", uploads={"max_files": 2, "max_file_bytes": 1000})
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


async def test_too_many_files_is_422_and_saves_none(limited: LiveServer) -> None:
    """A refusal of the request's shape (the document's ``maxItems``), not of its size."""
    async with httpx.AsyncClient(base_url=limited.url) as http:
        tid = await new_thread(http)
        document = (await http.get("/openapi.json")).json()
        response = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", (f"f{i}.txt", b"x")) for i in range(3)],
        )
        at_limit = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", (f"g{i}.txt", b"x")) for i in range(2)],
        )
    assert (response.status_code, response.json()) == (
        422,
        problem("too many files: at most 2 per request (uploads.max_files)", "too_many_files"),
    )
    assert at_limit.status_code == 200
    assert sorted(os.listdir(uploads_dir(limited, tid))) == ["g0.txt", "g1.txt"]
    upload = document["paths"]["/api/threads/{thread_id}/uploads"]["post"]
    files = upload["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert files["files"]["maxItems"] == 2
    assert {"413", "422"} <= set(upload["responses"])


@pytest.mark.parametrize("size", [1001, 5000, 3 * 1024 * 1024])
async def test_too_large_is_413_and_leaves_nothing(limited: LiveServer, size: int) -> None:
    async with httpx.AsyncClient(base_url=limited.url) as http:
        tid = await new_thread(http)
        response = await http.post(
            f"/api/threads/{tid}/uploads",
            files=[("files", ("small.txt", b"ok")), ("files", ("big.bin", b"x" * size))],
        )
        listed = await http.get(f"/api/threads/{tid}/uploads")
    assert (response.status_code, response.json()) == (
        413,
        problem(
            "big.bin is larger than the limit of 1000 bytes per file (uploads.max_file_bytes)",
            "upload_too_large",
        ),
    )
    assert listed.json() == {"files": [], "count": 0}
    assert os.listdir(uploads_dir(limited, tid)) == []


async def test_a_file_of_exactly_the_limit_is_accepted(limited: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=limited.url) as http:
        tid = await new_thread(http)
        response = await http.post(
            f"/api/threads/{tid}/uploads", files=[("files", ("full.bin", b"y" * 1000))]
        )
    assert response.status_code == 200
    assert response.json()["files"] == [entry("full.bin", 1000)]
