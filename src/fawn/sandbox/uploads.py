"""A thread's uploads directory: safe names, streamed atomic saves, listing and deletion.

Files arrive from HTTP clients, while the agent's commands (bubblewrap, same uid) can write
into ``/mnt/user-data/uploads`` too. So every operation here is anchored to the uploads
directory opened with ``O_NOFOLLOW`` and works on names inside it (``dir_fd``), never on a
host path a planted symlink could redirect:

* a save streams into a fresh hidden temp file (``O_EXCL | O_NOFOLLOW``), enforces the size
  cap while the bytes arrive, and is renamed over its name only once complete; an existing
  regular file is replaced, a symlink or anything else with that name is refused;
* listing and deletion only see regular files whose names :func:`safe_filename` could have
  produced, so temp files, symlinks and odd names the agent made are invisible here.

Staging and committing are separate steps so a request with several files is all or nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import stat
import threading
import unicodedata
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

from fawn.sandbox.errors import (
    InvalidFilename,
    NoSuchFile,
    UnsafeUploadTarget,
    UploadTooLarge,
)
from fawn.sandbox.paths import VIRTUAL_UPLOADS, ThreadPaths

MAX_FILENAME_BYTES = 255
"""Linux's ``NAME_MAX``; longer names are cut, keeping the extension."""

_MAX_EXTENSION_CHARS = 16
_TEMP_PREFIX = ".upload-"
_FLUSH_BYTES = 256 * 1024

# Control, format (bidi overrides, zero-width), surrogate and line/paragraph separators:
# nothing a file name needs, and several that make a name lie about itself.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SEPARATORS = re.compile(r"[/\\]")
_LEADING = re.compile(r"^[\s.]+")
_TRAILING = re.compile(r"\s+$")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UploadedFile(TypedDict):
    """One upload as clients and the uploads middleware see it."""

    filename: str
    size: int
    path: str
    extension: str


@dataclass(frozen=True, kw_only=True)
class StagedUpload:
    """A complete upload written to a hidden temp file, not yet visible under its name."""

    filename: str
    temp_name: str
    size: int


def safe_filename(name: str) -> str:
    """Reduce a client-supplied file name to a safe base name, or raise :class:`InvalidFilename`.

    Drops control/format characters, keeps only the last path component (``/`` and ``\\``
    both separate), strips leading dots and surrounding whitespace, normalises to NFC and
    caps the UTF-8 length at :data:`MAX_FILENAME_BYTES`, keeping a short extension. The
    result is never empty, never starts with ``.`` and contains no separator or NUL.
    """
    kept = "".join(ch for ch in name if unicodedata.category(ch) not in _DROPPED_CATEGORIES)
    parts = [_strip_edges(part) for part in _SEPARATORS.split(unicodedata.normalize("NFC", kept))]
    base = next((part for part in reversed(parts) if part), "")
    if not base:
        raise InvalidFilename(f"{name!r} is not a usable file name")
    return _cap_length(base)


def _strip_edges(part: str) -> str:
    return _TRAILING.sub("", _LEADING.sub("", part))


def _cap_length(base: str) -> str:
    if len(base.encode()) <= MAX_FILENAME_BYTES:
        return base
    stem, extension = os.path.splitext(base)
    if len(extension) > _MAX_EXTENSION_CHARS or not stem:
        stem, extension = base, ""
    budget = MAX_FILENAME_BYTES - len(extension.encode())
    # Cutting the encoded form may split a character; "ignore" drops the broken tail.
    stem = stem.encode()[:budget].decode("utf-8", "ignore")
    return _strip_edges(unicodedata.normalize("NFC", stem)) + extension


def upload_info(filename: str, size: int) -> UploadedFile:
    """The wire/state shape of one upload; ``extension`` is lower-cased (``.pdf``, or ``""``)."""
    return {
        "filename": filename,
        "size": size,
        "path": f"{VIRTUAL_UPLOADS}/{filename}",
        "extension": os.path.splitext(filename)[1].lower(),
    }


def _open_dir(paths: ThreadPaths) -> int:
    return os.open(paths.uploads, _DIR_FLAGS)


class _TempFile:
    """A temp file written from worker threads and closable from the event loop.

    The lock makes ``close`` wait for an in-flight write: closing the descriptor under a
    running write could let a newly opened file reuse the number and receive the bytes.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def write(self, data: bytes | bytearray) -> None:
        with self._lock:
            view = memoryview(data)
            while view and self._fd >= 0:
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


async def stage_upload(
    paths: ThreadPaths,
    filename: str,
    chunks: AsyncIterable[bytes],
    *,
    max_bytes: int,
) -> StagedUpload:
    """Stream ``chunks`` into a hidden temp file in the uploads directory.

    Raises :class:`UploadTooLarge` as soon as more than ``max_bytes`` arrived; on that or any
    other failure (cancellation included) the temp file is removed. Creates the uploads
    directory if needed: callers check the thread exists first.
    """
    name = safe_filename(filename)
    paths.uploads.mkdir(parents=True, exist_ok=True)
    temp_name = f"{_TEMP_PREFIX}{secrets.token_hex(8)}.part"
    # Creating, closing and unlinking are single metadata calls and stay on the loop, so a
    # cancellation can never strand a descriptor or a temp file; the data goes via threads.
    dir_fd = _open_dir(paths)
    try:
        temp = _TempFile(os.open(temp_name, _TEMP_FLAGS, 0o644, dir_fd=dir_fd))
    finally:
        os.close(dir_fd)
    size = 0
    try:
        buffer = bytearray()
        async for chunk in chunks:
            size += len(chunk)
            if size > max_bytes:
                raise UploadTooLarge(
                    f"{name} is larger than the limit of {max_bytes} bytes per file "
                    "(uploads.max_file_bytes)"
                )
            buffer += chunk
            if len(buffer) >= _FLUSH_BYTES:
                data, buffer = buffer, bytearray()
                await asyncio.to_thread(temp.write, data)
        if buffer:
            await asyncio.to_thread(temp.write, buffer)
    except BaseException:
        temp.close()
        discard_uploads(paths, [StagedUpload(filename=name, temp_name=temp_name, size=size)])
        raise
    temp.close()
    return StagedUpload(filename=name, temp_name=temp_name, size=size)


def commit_uploads(paths: ThreadPaths, staged: Sequence[StagedUpload]) -> list[UploadedFile]:
    """Rename staged uploads onto their names; refuse all of them if any name is unsafe.

    An existing regular file is replaced; a symlink, directory or other special file with
    the name raises :class:`UnsafeUploadTarget` before anything is renamed. Later entries
    with the same name win. Staged files are left in place on error: call
    :func:`discard_uploads`.
    """
    dir_fd = _open_dir(paths)
    try:
        for upload in staged:
            _check_target(dir_fd, upload.filename)
        for upload in staged:
            os.replace(upload.temp_name, upload.filename, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    latest = {upload.filename: upload.size for upload in staged}
    return [upload_info(name, size) for name, size in latest.items()]


def _check_target(dir_fd: int, name: str) -> None:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    kind = (
        "a symbolic link"
        if stat.S_ISLNK(mode)
        else "a directory"
        if stat.S_ISDIR(mode)
        else "a special file"
    )
    raise UnsafeUploadTarget(
        f"{VIRTUAL_UPLOADS}/{name} exists as {kind}; refusing to replace it with an upload"
    )


def discard_uploads(paths: ThreadPaths, staged: Sequence[StagedUpload]) -> None:
    """Remove the temp files of ``staged`` (those already committed are simply gone)."""
    if not staged:
        return
    try:
        dir_fd = _open_dir(paths)
    except FileNotFoundError:
        return
    try:
        for upload in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(upload.temp_name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


async def save_upload(
    paths: ThreadPaths,
    filename: str,
    chunks: AsyncIterable[bytes],
    *,
    max_bytes: int,
) -> UploadedFile:
    """Stage and commit one upload (see :func:`stage_upload` and :func:`commit_uploads`)."""
    staged = await stage_upload(paths, filename, chunks, max_bytes=max_bytes)
    try:
        [info] = commit_uploads(paths, [staged])
    except BaseException:
        discard_uploads(paths, [staged])
        raise
    return info


def list_uploads(paths: ThreadPaths) -> list[UploadedFile]:
    """The thread's uploads (regular files with safe names), sorted by name."""
    try:
        dir_fd = _open_dir(paths)
    except FileNotFoundError:
        return []
    try:
        files: list[UploadedFile] = []
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if _is_upload_name(entry.name) and entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    files.append(upload_info(entry.name, size))
    finally:
        os.close(dir_fd)
    return sorted(files, key=lambda info: info["filename"])


def delete_upload(paths: ThreadPaths, filename: str) -> None:
    """Delete one upload; :class:`NoSuchFile` unless :func:`list_uploads` would show it."""
    missing = NoSuchFile(f"no upload named {filename!r} in {VIRTUAL_UPLOADS}")
    if not _is_upload_name(filename):
        raise missing
    try:
        dir_fd = _open_dir(paths)
    except FileNotFoundError:
        raise missing from None
    try:
        try:
            mode = os.stat(filename, dir_fd=dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            raise missing from None
        if not stat.S_ISREG(mode):
            raise missing
        os.unlink(filename, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _is_upload_name(name: str) -> bool:
    try:
        return safe_filename(name) == name
    except InvalidFilename:
        return False
