"""The application routes every fawn surface uses besides the SDK's: uploads and artifacts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import httpx

OUTPUTS = "/mnt/user-data/outputs"


class ClientError(Exception):
    """The server refused a request; ``detail`` is its message."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{detail} (HTTP {status})")
        self.status = status
        self.detail = detail


async def check(response: httpx.Response) -> httpx.Response:
    """``response``, or `ClientError` with the server's ``detail`` for a 4xx/5xx."""
    if response.status_code < 400:
        return response
    await response.aread()
    try:
        body = response.json()
        detail = body.get("detail") if isinstance(body, dict) else None
    except ValueError:
        detail = None
    raise ClientError(response.status_code, str(detail or response.text or response.reason_phrase))


async def upload(
    http: httpx.AsyncClient, thread_id: str, paths: Sequence[Path]
) -> list[dict[str, Any]]:
    """Upload local files into the thread's ``/mnt/user-data/uploads``; the stored entries."""
    contents = await asyncio.to_thread(lambda: [p.read_bytes() for p in paths])
    files = [("files", (p.name, data)) for p, data in zip(paths, contents, strict=True)]
    response = await check(await http.post(f"/api/threads/{thread_id}/uploads", files=files))
    stored: list[dict[str, Any]] = response.json()["files"]
    return stored


async def artifacts(http: httpx.AsyncClient, thread_id: str) -> list[str]:
    """The virtual paths the agent presented in this thread (its ``artifacts``)."""
    response = await check(await http.get(f"/threads/{thread_id}"))
    values = response.json().get("values") or {}
    found = values.get("artifacts") or []
    return [str(p) for p in found if isinstance(p, str)]


def artifact_url(thread_id: str, virtual_path: str) -> str:
    return f"/api/threads/{thread_id}/artifacts/{quote(virtual_path.lstrip('/'))}"


def local_name(virtual_path: str, folder: Path) -> Path:
    """Where an artifact lands in ``folder``: its base name, never a path out of it."""
    name = PurePosixPath(virtual_path).name
    if name in ("", ".", ".."):
        raise ValueError(f"not a file path: {virtual_path!r}")
    return folder / name


async def download(
    http: httpx.AsyncClient, thread_id: str, virtual_path: str, folder: Path
) -> Path:
    """Save one artifact into ``folder`` (created if needed); the local path."""
    target = local_name(virtual_path, folder)
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.part")
    async with http.stream("GET", artifact_url(thread_id, virtual_path)) as response:
        await check(response)
        chunks = [chunk async for chunk in response.aiter_bytes()]
    await asyncio.to_thread(_write, partial, chunks)
    await asyncio.to_thread(partial.replace, target)
    return target


async def download_all(
    http: httpx.AsyncClient, thread_id: str, paths: Iterable[str], folder: Path
) -> list[Path]:
    return [await download(http, thread_id, p, folder) for p in paths]


def _write(path: Path, chunks: list[bytes]) -> None:
    with path.open("wb") as out:
        for chunk in chunks:
            out.write(chunk)
