"""Query strings, headers and paths that used to answer 500: each is a 4xx saying what was
wrong, and the thread stays usable.

Before: ``GET /threads/T/runs?offset=<38 digits>``, ``Last-Event-ID: <5000 digits>``,
``Range: bytes=<5000 digits>-``, an artifact path with a 5000-character name
(ENAMETOOLONG), and an artifact request racing a directory/symlink swap (EINVAL).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import httpx
import pytest

from tests.security.edge_helpers import new_thread
from tests.support.live import LiveServer
from tests.support.problems import problem

MAX_EVENT_ID = 2**63 - 1


def outputs(server: LiveServer, thread_id: str) -> Path:
    directory = server.data_dir / "threads" / thread_id / "user-data" / "outputs"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ("offset=" + "9" * 38, "offset: Input should be less than or equal to 9007199254740991"),
        ("offset=-1", "offset: Input should be greater than or equal to 0"),
        (
            "limit=" + "9" * 5000,
            "limit: Unable to parse input string as an integer, exceeded maximum size",
        ),
    ],
)
async def test_page_parameters_out_of_range(server: LiveServer, query: str, detail: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        response = await http.get(f"/threads/{tid}/runs?{query}")
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        assert (await http.get(f"/threads/{tid}/runs")).json() == []


@pytest.mark.parametrize("path", ["/threads/search", "/assistants/search"])
async def test_body_offsets_out_of_range(server: LiveServer, path: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        largest = await http.post(path, json={"offset": 2**53 - 1})
        beyond = await http.post(
            path,
            content=b'{"offset": 9007199254740992}',
            headers={"content-type": "application/json"},
        )
    assert (largest.status_code, largest.json()) == (200, [])
    assert (beyond.status_code, beyond.json()) == (
        422,
        problem("offset: integer 9007199254740992 is outside ±9007199254740991", "invalid_input"),
    )


async def test_the_largest_run_offset_is_an_empty_page(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        response = await http.get(f"/threads/{tid}/runs?offset={2**53 - 1}")
    assert (response.status_code, response.json()) == (200, [])


@pytest.mark.parametrize(
    ("last_event_id", "detail"),
    [
        (
            "1" + "0" * 4999,
            f"Last-Event-ID 100000000000…(5000 digits) is out of range (at most {MAX_EVENT_ID})",
        ),
        ("0" * 5000 + "7", None),
        (str(2**63), f"Last-Event-ID {2**63} is out of range (at most {MAX_EVENT_ID})"),
        (
            "x" * 5000,
            "Last-Event-ID must be a non-negative integer event id (or -1: all), got '"
            + "x" * 40
            + "'",
        ),
    ],
)
async def test_a_huge_last_event_id_is_a_400(
    server: LiveServer, last_event_id: str, detail: str | None
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        tid = (await new_thread(http))["thread_id"]
        run = await http.post(
            f"/threads/{tid}/runs/wait",
            json={"assistant_id": "lead_agent", "input": {"messages": ["hi"]}},
            headers={"content-type": "application/json"},
        )
        assert run.status_code == 200, run.text
        rid = run.headers["content-location"].rsplit("/", 1)[1]
        response = await http.get(
            f"/threads/{tid}/runs/{rid}/stream", headers={"last-event-id": last_event_id}
        )
        if detail is None:  # leading zeros are still a small number: the stream replays
            assert response.status_code == 200
        else:
            assert (response.status_code, response.json()) == (
                400,
                problem(detail, "invalid_cursor"),
            )
        assert (await http.get(f"/threads/{tid}/runs")).status_code == 200


@pytest.mark.parametrize("event_id", ["1" * 5000, "²", "-1"])
async def test_a_bad_thread_stream_cursor_is_a_422(server: LiveServer, event_id: str) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        response = await http.get(
            f"/threads/{tid}/stream", headers={"last-event-id": f"run:{event_id}".encode()}
        )
    assert (response.status_code, response.json()) == (
        422,
        problem(
            "Last-Event-ID for a thread stream looks like '<run_id>:<event id>'", "invalid_input"
        ),
    )


@pytest.mark.parametrize(
    ("range_header", "status", "body"),
    [
        ("bytes=" + "9" * 5000 + "-", 416, None),
        ("bytes=0-" + "9" * 5000, 206, b"0123456789"),
        ("bytes=-" + "9" * 5000, 206, b"0123456789"),
        ("bytes=" + "0" * 5000 + "2-3", 206, b"23"),
    ],
)
async def test_huge_range_positions(
    server: LiveServer, range_header: str, status: int, body: bytes | None
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        (outputs(server, tid) / "digits.txt").write_bytes(b"0123456789")
        response = await http.get(
            f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/digits.txt",
            headers={"range": range_header},
        )
    assert response.status_code == status
    if body is None:
        assert response.json() == problem(
            "range not satisfiable: the file has 10 bytes", "range_not_satisfiable"
        )
        assert response.headers["content-range"] == "bytes */10"
    else:
        assert response.content == body


async def test_an_artifact_name_too_long_for_the_file_system(server: LiveServer) -> None:
    name = "n" * 5000
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        outputs(server, tid)
        response = await http.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/{name}/x")
    shown = ("/mnt/user-data/outputs/" + name)[:200] + "…"
    assert (response.status_code, response.json()) == (
        404,
        problem(f"{shown} does not exist: a name in it is too long for a file", "file_not_found"),
    )


async def test_an_artifact_racing_a_directory_symlink_swap(server: LiveServer) -> None:
    """While the agent swaps ``d`` between a directory and a symlink, every download is a
    clean answer (the file, 403 or 404), never a 500."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await new_thread(http))["thread_id"]
        root = outputs(server, tid)
        real = root / "real"
        real.mkdir()
        (real / "f.txt").write_text("inside")
        swapped = root / "d"
        stop = threading.Event()

        def swap() -> None:
            while not stop.is_set():
                swapped.mkdir()
                (swapped / "f.txt").write_text("dir")
                shutil.rmtree(swapped)
                os.symlink("real", swapped)
                os.unlink(swapped)
                os.symlink("/etc", swapped)
                os.unlink(swapped)

        swapper = threading.Thread(target=swap)
        swapper.start()
        statuses: set[int] = set()
        try:
            for _ in range(300):
                response = await http.get(
                    f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/d/f.txt"
                )
                statuses.add(response.status_code)
                if response.status_code != 200:
                    assert response.json()["code"] in ("file_not_found", "forbidden_path"), (
                        response.text
                    )
                else:
                    # (empty: opened between the swapper's create and write)
                    assert response.content in (b"dir", b"inside", b"")
        finally:
            stop.set()
            swapper.join()
        assert statuses <= {200, 403, 404}
