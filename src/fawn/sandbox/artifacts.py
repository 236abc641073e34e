"""Opening a thread's files for download by virtual path, without trusting the file tree.

The agent's commands can create, rename and symlink anything under ``/mnt/user-data``, even
while a download is being served. So the path is first checked by :class:`PathPolicy`
(``..`` folding, symlink resolution, containment) and then opened component by component
from the mount's directory with ``O_NOFOLLOW``: if a symlink appears between the check and
the open, the open fails instead of following it. What is returned is an open file, so what
is sent is exactly what was checked.

``ForbiddenPath`` (403) means the path leaves the thread's ``workspace``, ``uploads`` or
``outputs``; that is decided from the path and the links along it, never from whether the
target exists, so it reveals nothing about the host. ``NoSuchFile`` (404) means the path
stays inside but names no regular file.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from fawn.sandbox.errors import (
    ForbiddenPath,
    NoSuchFile,
    PathNotFound,
    PathOutsideSandbox,
)
from fawn.sandbox.paths import PathPolicy, ThreadPaths

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO the agent made must not wait for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_ALLOWED = (
    "artifacts must be under /mnt/user-data/workspace, /mnt/user-data/uploads "
    "or /mnt/user-data/outputs"
)


@dataclass(frozen=True, kw_only=True)
class ArtifactFile:
    """An open regular file of the thread; the caller closes ``file``."""

    file: io.FileIO
    name: str
    virtual_path: str
    stat: os.stat_result


def open_artifact(paths: ThreadPaths, virtual_path: str) -> ArtifactFile:
    """Open the regular file at ``virtual_path`` (e.g. ``/mnt/user-data/outputs/a.md``).

    Raises :class:`ForbiddenPath` when the path (or a symlink on it) leaves the thread's
    user-data mounts, and :class:`NoSuchFile` when nothing readable is there. Blocking.
    """
    policy = PathPolicy(paths)
    try:
        host = policy.to_host(virtual_path)
    except (PathOutsideSandbox, PathNotFound) as exc:
        raise ForbiddenPath(f"the path leaves the thread's files; {_ALLOWED}") from exc
    except OSError as exc:  # a link resolved while the tree was being changed
        raise _os_refusal(exc, _shorten(virtual_path)) from None
    root, parts = _split_under_mount(paths, host)
    display = _shorten(policy.to_virtual(host))
    if not parts:
        raise NoSuchFile(f"{display} is a directory, not a file")
    fd = _open_beneath(root, parts, display)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NoSuchFile(f"{display} is not a regular file")
        os.set_blocking(fd, True)
        file = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    return ArtifactFile(file=file, name=parts[-1], virtual_path=display, stat=info)


def _split_under_mount(paths: ThreadPaths, host: Path) -> tuple[str, list[str]]:
    """The resolved mount directory holding ``host`` and the components below it."""
    text = str(host)
    for mount in (paths.workspace, paths.uploads, paths.outputs):
        root = os.path.realpath(mount)
        if text == root:
            return root, []
        if text.startswith(root + os.sep):
            return root, text[len(root) + 1 :].split(os.sep)
    # /mnt/user-data itself, or /mnt/skills: inside the policy, but not something we serve.
    raise ForbiddenPath(f"the path is not a file of the thread; {_ALLOWED}")


def _open_beneath(root: str, parts: list[str], display: str) -> int:
    """Open ``root/parts...`` following no symlink on the way (they were resolved already)."""
    try:
        dir_fd = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        raise NoSuchFile(f"{display} does not exist") from None
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        raise NoSuchFile(f"{display} does not exist") from None
    except OSError as exc:
        raise _os_refusal(exc, display) from None
    finally:
        os.close(dir_fd)


#: Errors of a path the agent can change at any moment: they describe the request's path,
#: not a fault of the server.
_CHANGED = frozenset({errno.EINVAL, errno.ENOENT, errno.ENOTDIR, errno.ESTALE})


def _os_refusal(exc: OSError, display: str) -> Exception:
    """The refusal for an error met while resolving or opening ``display``; unknown ones
    (an I/O error) stay what they are."""
    if exc.errno == errno.ELOOP:
        return ForbiddenPath(f"{display} changed into a symbolic link while being opened")
    if exc.errno == errno.EACCES:
        return NoSuchFile(f"{display} is not readable")
    if exc.errno == errno.ENAMETOOLONG:
        return NoSuchFile(f"{display} does not exist: a name in it is too long for a file")
    if exc.errno in _CHANGED:
        return NoSuchFile(f"{display} changed while being opened; it is not a file now")
    return exc


def _shorten(path: str) -> str:
    return path if len(path) <= 200 else path[:200] + "…"
