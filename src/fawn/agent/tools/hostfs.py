"""File access on the host for the file tools, confined to one thread's mounts.

The file tools do their I/O in the server process, not in bubblewrap, so this is where
containment is enforced for them, in two layers:

1. :meth:`PathPolicy.to_host` resolves the virtual path (symlinks included) and refuses
   anything outside the thread's mounts;
2. the resolved path is then opened one component at a time from its mount's root, with
   ``O_NOFOLLOW`` at every step. A command running in the sandbox at the same time cannot
   swap a directory for a symlink between the check and the use: the open fails instead.

Directory walks descend through directory descriptors the same way; symbolic links are
listed, never followed. Everything here blocks: callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fawn.agent.tools.errors import FileTooLarge, WrongFileType, from_os_error
from fawn.sandbox import (
    VIRTUAL_OUTPUTS,
    VIRTUAL_SKILLS,
    VIRTUAL_UPLOADS,
    VIRTUAL_USER_DATA,
    VIRTUAL_WORKSPACE,
    PathOutsideSandbox,
    PathPolicy,
)

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Most specific first; the user-data root only stands for itself (see PathPolicy).
_MOUNTS = (VIRTUAL_WORKSPACE, VIRTUAL_UPLOADS, VIRTUAL_OUTPUTS, VIRTUAL_SKILLS, VIRTUAL_USER_DATA)

Kind = Literal["dir", "file", "link", "other"]


@dataclass(frozen=True)
class Target:
    """A resolved path: where it is on the host and what the agent calls it."""

    host: Path
    virtual: str


def resolve(policy: PathPolicy, path: str, *, write: bool = False) -> Target:
    """Map the agent's ``path`` onto the host; raises :class:`fawn.sandbox.SandboxError`
    for a path outside the thread's mounts, or (``write``) on a read-only one."""
    host = policy.to_host(path, write=write)
    return Target(host, policy.to_virtual(host))


def _split(virtual: str) -> tuple[str, list[str]]:
    """The mount ``virtual`` lies in, and the path's components below it."""
    for mount in _MOUNTS:
        if virtual == mount:
            return mount, []
        if virtual.startswith(mount + "/") and mount != VIRTUAL_USER_DATA:
            return mount, virtual[len(mount) + 1 :].split("/")
    raise PathOutsideSandbox(f"{virtual} is outside the sandbox")


def _open_beneath(
    policy: PathPolicy, target: Target, flags: int, *, create_parents: bool = False
) -> int:
    """Open ``target`` component by component from its mount's root, following no link.

    ``target`` is already resolved, so none of its components is a symbolic link; one that
    appeared since (a command in the sandbox racing the tool) makes the open fail.
    """
    mount, parts = _split(target.virtual)
    fd = os.open(policy.to_host(mount), _DIRECTORY)
    try:
        if not parts:
            return os.open(".", flags, 0o644, dir_fd=fd)
        for part in parts[:-1]:
            if create_parents:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.open(parts[-1], flags, 0o644, dir_fd=fd)
    finally:
        os.close(fd)


def _open_file(
    target: Target, policy: PathPolicy, flags: int, *, create_parents: bool = False
) -> int:
    """A descriptor on the regular file ``target``."""
    try:
        fd = _open_beneath(policy, target, flags, create_parents=create_parents)
    except OSError as error:
        raise from_os_error(error, target.virtual) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise WrongFileType(f"{target.virtual} is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise WrongFileType(f"{target.virtual} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(target: Target, policy: PathPolicy, *, limit: int, hint: str = "") -> bytes:
    """The content of a regular file of at most ``limit`` bytes (``hint`` ends the error)."""
    with os.fdopen(_open_file(target, policy, _READ), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise FileTooLarge(
                f"{target.virtual} is {size} bytes, over the {limit}-byte limit{hint}"
            )
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise from_os_error(error, target.virtual) from None
    if len(data) > limit:
        raise FileTooLarge(f"{target.virtual} is over the {limit}-byte limit{hint}")
    return data


def read_head(target: Target, policy: PathPolicy, count: int) -> tuple[bytes, int]:
    """The first ``count`` bytes of a regular file, and its size."""
    with os.fdopen(_open_file(target, policy, _READ), "rb") as handle:
        try:
            return handle.read(count), os.fstat(handle.fileno()).st_size
        except OSError as error:
            raise from_os_error(error, target.virtual) from None


def write_bytes(target: Target, policy: PathPolicy, data: bytes, *, append: bool = False) -> None:
    """Write (or append) ``data``, creating missing parent directories."""
    flags = _WRITE | (os.O_APPEND if append else 0)
    with os.fdopen(_open_file(target, policy, flags, create_parents=True), "wb") as handle:
        try:
            # Truncate only once the open succeeded: a refused target is left intact.
            if not append:
                handle.truncate(0)
            handle.write(data)
        except OSError as error:
            raise from_os_error(error, target.virtual) from None


def decode_text(data: bytes, virtual: str) -> str:
    """``data`` as UTF-8 text, or a clear error for binary content."""
    if b"\0" not in data:
        with contextlib.suppress(UnicodeDecodeError):
            return data.decode("utf-8")
    raise WrongFileType(
        f"{virtual} is not UTF-8 text (it looks like a binary file). Inspect it with bash "
        "(e.g. `file`, `xxd | head`, or a Python library for its format), or use view_image "
        "for an image"
    )


# -- directories ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One directory entry met by :func:`walk`."""

    relative: str  # from the walk's root, '/'-separated
    name: str
    kind: Kind
    depth: int  # 1 for the root's children
    parent_fd: int  # valid only until the walk moves on


def open_directory(target: Target, policy: PathPolicy) -> int:
    """A descriptor on the directory ``target`` (the caller closes it)."""
    try:
        return _open_beneath(policy, target, _DIRECTORY)
    except NotADirectoryError:
        raise WrongFileType(f"{target.virtual} is not a directory") from None
    except OSError as error:
        raise from_os_error(error, target.virtual) from None


def _kind(entry: os.DirEntry[str]) -> Kind:
    if entry.is_symlink():
        return "link"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    if entry.is_file(follow_symlinks=False):
        return "file"
    return "other"


def _entries(fd: int) -> Iterator[tuple[str, Kind]]:
    with os.scandir(fd) as entries:
        return iter(sorted((entry.name, _kind(entry)) for entry in entries))


def walk(
    root_fd: int, *, max_depth: int, prune: frozenset[str] = frozenset()
) -> Generator[Entry, None, None]:
    """Depth-first, name-sorted walk below ``root_fd``, never following symbolic links.

    Directories at ``max_depth`` or named in ``prune`` are listed but not entered;
    unreadable ones are skipped. Close the iterator (``contextlib.closing``) when stopping
    early: it holds one descriptor per level.
    """
    stack: list[tuple[int, str, Iterator[tuple[str, Kind]]]] = []
    try:
        root = os.dup(root_fd)
        stack.append((root, "", iter(())))  # on the stack before listing: `finally` closes it
        stack[0] = (root, "", _entries(root))
        while stack:
            fd, prefix, pending = stack[-1]
            item = next(pending, None)
            if item is None:
                stack.pop()
                os.close(fd)
                continue
            name, kind = item
            depth = len(stack)
            yield Entry(prefix + name, name, kind, depth, fd)
            if kind == "dir" and depth < max_depth and name not in prune:
                _descend(stack, fd, name, f"{prefix}{name}/")
    finally:
        for fd, _, _ in stack:
            os.close(fd)


def _descend(
    stack: list[tuple[int, str, Iterator[tuple[str, Kind]]]], fd: int, name: str, prefix: str
) -> None:
    try:
        child = os.open(name, _DIRECTORY, dir_fd=fd)
    except OSError:
        return
    stack.append((child, prefix, iter(())))
    with contextlib.suppress(OSError):
        stack[-1] = (child, prefix, _entries(child))


def read_entry(entry: Entry, *, limit: int) -> bytes | None:
    """The content of a regular file met by :func:`walk`; None when it is not one, cannot
    be read, or is larger than ``limit`` bytes."""
    if entry.kind != "file":
        return None
    try:
        fd = os.open(entry.name, _READ, dir_fd=entry.parent_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        try:
            return handle.read(limit)
        except OSError:
            return None


class WriteLocks:
    """Serialises read-modify-write edits of one file across concurrent tool calls.

    A fixed set of stripes keyed by host path: bounded memory, and two edits of one file
    always share a lock (two different files seldom do, and then only wait briefly).
    """

    def __init__(self, stripes: int = 64) -> None:
        self._locks = tuple(threading.Lock() for _ in range(stripes))

    def for_path(self, host: Path) -> threading.Lock:
        return self._locks[hash(str(host)) % len(self._locks)]
