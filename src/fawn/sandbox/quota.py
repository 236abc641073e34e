"""A thread's disk use, and handing its files to the sandbox's uid.

:func:`survey` walks the thread's writable mounts without following a symbolic link (each
directory is opened relative to its parent with ``O_NOFOLLOW``), adds up the disk blocks
really used (a sparse file counts for what it holds), and, when the sandbox runs as
another uid than the server, gives that uid whatever the server created there (uploads,
files written by the file tools, a copied thread), so that the command can change them.

The walk keeps one descriptor per level, so it stops at :data:`MAX_DEPTH` levels; a tree
deeper than that cannot be measured and counts as over quota (see ``Survey.complete``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 512
_BLOCK = 512  # st_blocks unit
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# A directory that vanished, or was swapped for something else, mid-walk is skipped.
_GONE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})


@dataclass(frozen=True)
class Survey:
    bytes: int
    complete: bool  # False: a directory deeper than MAX_DEPTH was not looked into


def survey(roots: Iterable[Path], owner: int | None = None) -> Survey:
    """Disk used below ``roots``; with ``owner``, everything there becomes theirs."""
    walk = _Walk(owner)
    for root in roots:
        walk.root(root)
    return Survey(walk.total, walk.complete)


class _Walk:
    def __init__(self, owner: int | None) -> None:
        self.owner = owner
        self.total = 0
        self.complete = True

    def root(self, path: Path) -> None:
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as error:
            if error.errno in _GONE:
                return
            raise
        stack: list[tuple[int, list[str]]] = []
        try:
            info = os.fstat(fd)
            self._own(info, None, fd)
            self.total += info.st_blocks * _BLOCK
            stack.append((fd, self._list(fd)))
            while stack:
                parent, pending = stack[-1]
                if not pending:
                    os.close(parent)
                    stack.pop()
                    continue
                name = pending.pop()
                if len(stack) >= MAX_DEPTH:
                    self.complete = False
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=parent)
                except OSError as error:
                    if error.errno in _GONE:
                        continue
                    raise
                stack.append((child, []))
                stack[-1] = (child, self._list(child))  # listed once its fd is held
        finally:
            for fd_open, _ in stack:
                os.close(fd_open)

    def _list(self, fd: int) -> list[str]:
        """Account for the entries of one directory; the names of its subdirectories."""
        subdirs: list[str] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                name = entry.name
                self._own(info, name, fd)
                self.total += info.st_blocks * _BLOCK
                if stat.S_ISDIR(info.st_mode):
                    subdirs.append(name)
        return subdirs

    def _own(self, info: os.stat_result, name: str | None, dir_fd: int) -> None:
        """Give the entry ``name`` of ``dir_fd`` (``dir_fd`` itself for None) to the owner.

        Never through a link: symbolic links are changed themselves, and a file with more
        than one hard link is left as it is (its other name may be outside the thread)."""
        owner = self.owner
        if owner is None or (info.st_uid, info.st_gid) == (owner, owner):
            return
        if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
            return
        with contextlib.suppress(FileNotFoundError):
            if name is None:
                os.fchown(dir_fd, owner, owner)
            else:
                os.chown(name, owner, owner, dir_fd=dir_fd, follow_symlinks=False)


class Unreachable(Exception):
    """A directory above the data directory that the sandbox's uid may not search."""

    def __init__(self, directory: Path) -> None:
        super().__init__(str(directory))
        self.directory = directory


def _searchable_by(info: os.stat_result, uid: int) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == uid:  # the sandbox's gid is its uid
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def grant_search(data_dir: Path, target: Path, uid: int) -> None:
    """Make sure ``uid`` can walk to ``target``, a directory inside ``data_dir``.

    bubblewrap, running as ``uid``, resolves its mount sources by path. The directories
    from ``data_dir`` down to ``target`` are the server's: they get the search bit for
    others when they lack it (never the read bit: nothing can be listed). Those above
    ``data_dir`` are not the server's to change: one that ``uid`` cannot search raises
    :class:`Unreachable`.
    """
    for ancestor in reversed(data_dir.parents):
        if not _searchable_by(os.stat(ancestor), uid):
            raise Unreachable(ancestor)
    inside = target.relative_to(data_dir)
    current = data_dir
    for part in ("", *inside.parts):
        current = current / part if part else current
        info = os.lstat(current)
        if stat.S_ISDIR(info.st_mode) and not _searchable_by(info, uid):
            os.chmod(current, stat.S_IMODE(info.st_mode) | stat.S_IXOTH)
