"""Application routes for a thread's files: uploads in, artifacts out (``/api/threads/...``).

Uploads are parsed from the request stream as they arrive (python-multipart's streaming
parser) and written straight into the thread's uploads directory, so the per-file size cap
stops an oversized file at the limit instead of after spooling it. A request's files are
committed together, or not at all.

Artifacts are served from an already opened file (see :mod:`fawn.sandbox.artifacts`), with
single-range support. Types a browser would run as a document in our origin (HTML, XHTML,
SVG, XML) are always sent as attachments.
"""

from __future__ import annotations

import asyncio
import functools
import io
import mimetypes
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from email.utils import formatdate
from typing import Any
from urllib.parse import quote

import anyio.to_thread
from fastapi import APIRouter, HTTPException, Request, Response
from starlette.datastructures import Headers
from starlette.responses import StreamingResponse

from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.multipart import file_parts
from fawn.gateway.responses import JSON
from fawn.gateway.services import Services
from fawn.runs.errors import InvalidInput, NotFound
from fawn.runs.threads import check_thread_id
from fawn.sandbox.artifacts import ArtifactFile, open_artifact
from fawn.sandbox.errors import TooManyFiles
from fawn.sandbox.paths import ThreadPaths
from fawn.sandbox.uploads import (
    StagedUpload,
    commit_uploads,
    delete_upload,
    discard_uploads,
    list_uploads,
    stage_upload,
)
from fawn.store.scope import SYSTEM

router = APIRouter(tags=["files"])

UPLOAD_FIELD = "files"

_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        UPLOAD_FIELD: {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "minItems": 1,
                        }
                    },
                    "required": [UPLOAD_FIELD],
                    "additionalProperties": False,
                }
            }
        },
    }
}


async def _thread_paths(
    services: Services, caller: Caller, thread_id: str, action: str
) -> ThreadPaths:
    """The thread's directories, if the caller reaches the thread (else 404, as for a
    missing one); they lie under the thread owner's directory."""
    scope = await caller.scope("threads", action, {"thread_id": thread_id})
    record = await services.threads.get(thread_id, scope=scope)
    return ThreadPaths.for_thread(services.data_dir, thread_id, record.user_id)


async def _reserved_paths(
    services: Services, caller: Caller, thread_id: str, action: str
) -> ThreadPaths:
    """Like :func:`_thread_paths`, and for a thread that does not exist yet (DeerFlow's app
    uploads a new chat's files before it creates the thread): the directories the thread
    will have once the caller creates it. Nothing is created but the files; a thread of
    another owner is still not found (its id is taken: its files are never these)."""
    try:
        return await _thread_paths(services, caller, thread_id, action)
    except NotFound:
        if await services.threads.repo.get(thread_id, scope=SYSTEM) is not None:
            raise
    scope = await caller.scope(
        "threads", "create", {"thread_id": thread_id, "metadata": {}, "if_exists": "raise"}
    )
    return ThreadPaths.for_thread(services.data_dir, check_thread_id(thread_id), scope.user_id)


def _with_urls(thread_id: str, files: list[Any]) -> list[dict[str, Any]]:
    """Uploads as DeerFlow's app reads them: also by ``virtual_path`` and ``artifact_url``."""
    return [
        {
            **info,
            "virtual_path": info["path"],
            "artifact_url": f"/api/threads/{thread_id}/artifacts{info['path']}",
        }
        for info in files
    ]


# -- uploads --------------------------------------------------------------------------------


@router.post("/api/threads/{thread_id}/uploads", openapi_extra=_UPLOAD_BODY)
async def upload_files(
    thread_id: str, request: Request, services: ServicesDep, caller: CallerDep
) -> Response:
    """Save the ``files`` parts of a multipart body into ``/mnt/user-data/uploads`` (of a
    thread that may not exist yet: see :func:`_reserved_paths`)."""
    paths = await _reserved_paths(services, caller, thread_id, "update")
    limits = services.config.uploads
    staged: list[StagedUpload] = []
    try:
        async with aclosing(file_parts(request, UPLOAD_FIELD)) as parts:
            async for filename, body in parts:
                if len(staged) == limits.max_files:
                    raise TooManyFiles(
                        f"too many files: at most {limits.max_files} per request (uploads.max_files)"
                    )
                staged.append(
                    await stage_upload(paths, filename, body, max_bytes=limits.max_file_bytes)
                )
        if not staged:
            raise InvalidInput(f"no files: send one or more parts named {UPLOAD_FIELD!r}")
        # A few renames in one local directory: done inline so a cancellation cannot land
        # between committing and cleaning up.
        files = commit_uploads(paths, staged)
    except BaseException:
        discard_uploads(paths, staged)
        raise
    return JSON(
        {
            "success": True,
            "files": _with_urls(thread_id, list(files)),
            "message": f"Successfully uploaded {len(files)} file(s)",
            "skipped_files": [],
        }
    )


@router.get("/api/threads/{thread_id}/uploads")
async def get_uploads(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    paths = await _thread_paths(services, caller, thread_id, "read")
    files = await asyncio.to_thread(list_uploads, paths)
    return JSON({"files": _with_urls(thread_id, list(files)), "count": len(files)})


@router.get("/api/threads/{thread_id}/uploads/list")
async def list_thread_uploads(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """DeerFlow's path for the list (also for a new chat whose thread does not exist yet)."""
    paths = await _reserved_paths(services, caller, thread_id, "read")
    files = await asyncio.to_thread(list_uploads, paths)
    return JSON({"files": _with_urls(thread_id, list(files)), "count": len(files)})


@router.get("/api/threads/{thread_id}/uploads/limits")
async def upload_limits(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """The limits uploads are held to (a request's total is bounded by the two others)."""
    await _reserved_paths(services, caller, thread_id, "read")
    limits = services.config.uploads
    return JSON(
        {
            "max_files": limits.max_files,
            "max_file_size": limits.max_file_bytes,
            "max_total_size": limits.max_files * limits.max_file_bytes,
        }
    )


@router.delete("/api/threads/{thread_id}/uploads/{filename}")
async def remove_upload(
    thread_id: str, filename: str, services: ServicesDep, caller: CallerDep
) -> Response:
    paths = await _reserved_paths(services, caller, thread_id, "update")
    await asyncio.to_thread(delete_upload, paths, filename)
    return JSON({"success": True, "message": f"Deleted {filename}"})


# -- artifacts ------------------------------------------------------------------------------

_CHUNK_BYTES = 64 * 1024

# Types a browser renders as a document able to run script in our origin.
_ACTIVE_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml"}
)

_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)", re.ASCII | re.IGNORECASE)

# Types agents often write that Python's built-in table lacks.
_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".log": "text/plain",
    ".go": "text/plain",
    ".rs": "text/plain",
    ".sql": "text/plain",
    ".ts": "text/plain",
    ".tsx": "text/plain",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".jsonl": "application/jsonl",
    ".ipynb": "application/x-ipynb+json",
    ".xhtml": "application/xhtml+xml",
    ".webp": "image/webp",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


@router.get("/api/threads/{thread_id}/artifacts/{path:path}")
async def get_artifact(
    thread_id: str,
    path: str,
    request: Request,
    services: ServicesDep,
    caller: CallerDep,
    download: bool = False,
) -> Response:
    """A file of the thread by virtual path without its leading slash.

    For example ``mnt/user-data/outputs/report.md``. 403 for a path leaving the thread's
    ``/mnt/user-data/{workspace,uploads,outputs}`` (symlinks included), 404 for no regular
    file there. ``Range: bytes=a-b`` gives 206 (or 416); ``download=true`` forces an
    attachment.
    """
    paths = await _thread_paths(services, caller, thread_id, "read")
    # anyio's worker call is not abandoned on cancellation, so the opened file never leaks.
    artifact = await anyio.to_thread.run_sync(open_artifact, paths, "/" + path)
    try:
        return _artifact_response(artifact, request.headers, force_download=download)
    except BaseException:
        artifact.file.close()
        raise


def _artifact_response(
    artifact: ArtifactFile, request_headers: Headers, *, force_download: bool
) -> Response:
    size = artifact.stat.st_size
    etag = f'"{artifact.stat.st_ino:x}-{artifact.stat.st_mtime_ns:x}-{size:x}"'
    last_modified = formatdate(artifact.stat.st_mtime, usegmt=True)
    media_type = _media_type(artifact.name)
    attachment = force_download or _runs_script(media_type)
    headers = {
        "accept-ranges": "bytes",
        "content-disposition": _disposition(
            "attachment" if attachment else "inline", artifact.name
        ),
        "etag": etag,
        "last-modified": last_modified,
        "x-content-type-options": "nosniff",
    }
    if_range = request_headers.get("if-range")
    span = None
    if if_range is None or if_range in (etag, last_modified):
        span = _requested_range(request_headers.get("range"), size)
    start, end = span or (0, size)
    if span is not None:
        headers["content-range"] = f"bytes {start}-{end - 1}/{size}"
    headers["content-length"] = str(end - start)
    return StreamingResponse(
        _read(artifact.file, start, end),
        status_code=206 if span is not None else 200,
        media_type=media_type,
        headers=headers,
    )


def _requested_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one ``[start, end)`` asked for by ``Range``, or None to send the whole file.

    Multiple ranges, other units and malformed values are ignored (RFC 9110 lets a server
    answer any Range with the full representation); a range starting past the end is a 416.
    """
    match = _RANGE.fullmatch(header.strip()) if header else None
    if match is None:
        return None
    first, last = (_position(g) for g in match.groups())
    if first is not None:
        start = first
        if last is not None and last < start:
            return None
        end = min(last + 1, size) if last is not None else size
    elif last is not None:
        # A suffix: the final N bytes. Zero of them cannot be satisfied.
        length = last
        start, end = (max(size - length, 0) if length else size), size
    else:
        return None
    if start >= size:
        raise HTTPException(
            status_code=416,
            detail=f"range not satisfiable: the file has {size} bytes",
            headers={"content-range": f"bytes */{size}"},
        )
    return start, end


def _position(digits: str) -> int | None:
    """A byte position of a Range; any position beyond 2**63 is as good as 2**63 (and
    Python refuses to convert more than 4300 digits)."""
    if not digits:
        return None
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 2**63


@functools.cache
def _mime_table() -> mimetypes.MimeTypes:
    """Python's built-in table plus :data:`_EXTRA_TYPES`.

    The host's ``/etc/mime.types`` is deliberately left out, so every host serves a file
    with the same type (some map ``.rs`` to an XML type, ``.ts`` to Qt Linguist).
    """
    table = mimetypes.MimeTypes()
    for extension, media_type in _EXTRA_TYPES.items():
        table.add_type(media_type, extension)
    return table


def _media_type(name: str) -> str:
    media_type, encoding = _mime_table().guess_type(name, strict=False)
    if encoding is not None:
        # data.csv.gz is gzip bytes, not CSV; never label it with the inner type.
        return "application/gzip" if encoding == "gzip" else "application/octet-stream"
    return media_type or "application/octet-stream"


def _runs_script(media_type: str) -> bool:
    return media_type in _ACTIVE_TYPES or media_type.endswith("+xml")


def _disposition(kind: str, filename: str) -> str:
    quoted = quote(filename, safe="")
    if quoted == filename:
        return f'{kind}; filename="{filename}"'
    return f"{kind}; filename*=utf-8''{quoted}"


async def _read(file: io.FileIO, start: int, end: int) -> AsyncIterator[bytes]:
    try:
        file.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = await anyio.to_thread.run_sync(file.read, min(_CHUNK_BYTES, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk
    finally:
        file.close()
