"""Copying a thread's files (``threads.copy``) without trusting what the agent left there.

The agent can make anything under ``/mnt/user-data``: FIFOs (opening one blocks until a
writer comes), sockets, device nodes, symlinks to host files, a 2 GiB file that is one big
hole, a thousand hard links to one large file. So the copy walks the tree itself, following
no link:

- directories and regular files are copied, with their mode and times;
- regular files are copied **sparsely** (only their data extents, found with
  ``SEEK_DATA``/``SEEK_HOLE``), and hard links stay links: the copy never takes more real
  disk than the source does;
- symbolic links are recreated as links (never followed);
- FIFOs, sockets and device nodes are skipped: they hold no data, and opening one could
  block or reach outside.

It writes into a directory that must not exist yet; on any error the caller removes it, so
a copy is whole or absent.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK_BYTES = 1024 * 1024


@dataclass(kw_only=True)
class CopyReport:
    """What a copy did: data bytes written, and the special files it left out."""

    data_bytes: int = 0
    skipped: list[str] = field(default_factory=list)


def copy_tree(source: Path, target: Path) -> CopyReport:
    """Copy the tree at ``source`` into ``target`` (created here; must not exist). Blocking."""
    report = CopyReport()
    linked: dict[tuple[int, int], str] = {}
    os.mkdir(target, 0o700)
    pending = [(str(source), str(target))]
    directories: list[tuple[str, os.stat_result]] = []
    while pending:
        src_dir, dst_dir = pending.pop()
        with os.scandir(src_dir) as entries:
            for entry in entries:
                dst = os.path.join(dst_dir, entry.name)
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    os.mkdir(dst, 0o700)
                    pending.append((entry.path, dst))
                    directories.append((dst, info))
                elif stat.S_ISLNK(info.st_mode):
                    os.symlink(os.readlink(entry.path), dst)
                elif not stat.S_ISREG(info.st_mode) or not _copy_regular(
                    entry.path, dst, info, linked, report
                ):
                    report.skipped.append(os.path.relpath(entry.path, source))
    # Modes and times last: a read-only directory must still be written into first.
    for path, info in reversed(directories):
        os.chmod(path, stat.S_IMODE(info.st_mode))
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    root = os.stat(source)
    os.chmod(target, stat.S_IMODE(root.st_mode))
    return report


def _copy_regular(
    src: str,
    dst: str,
    info: os.stat_result,
    linked: dict[tuple[int, int], str],
    report: CopyReport,
) -> bool:
    """Copy one regular file; False when it is no longer one (replaced meanwhile)."""
    key = (info.st_dev, info.st_ino)
    if info.st_nlink > 1 and key in linked:
        os.link(linked[key], dst)
        return True
    fd_in = os.open(src, _READ_FLAGS)
    try:
        opened = os.fstat(fd_in)
        if not stat.S_ISREG(opened.st_mode):
            return False
        fd_out = os.open(dst, _WRITE_FLAGS, 0o600)
        try:
            report.data_bytes += _copy_extents(fd_in, fd_out, opened.st_size)
            os.ftruncate(fd_out, opened.st_size)
            os.fchmod(fd_out, stat.S_IMODE(opened.st_mode))
            os.utime(fd_out, ns=(opened.st_atime_ns, opened.st_mtime_ns))
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    if info.st_nlink > 1:
        linked[key] = dst
    return True


def _copy_extents(fd_in: int, fd_out: int, size: int) -> int:
    """Copy the data extents of ``fd_in`` below ``size`` to the same offsets of ``fd_out``,
    leaving holes as holes; the number of bytes copied."""
    copied = 0
    position = 0
    while position < size:
        try:
            start = os.lseek(fd_in, position, os.SEEK_DATA)
            end = min(os.lseek(fd_in, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                break
            if exc.errno != errno.EINVAL:
                raise
            start, end = position, size  # no extent map here: copy it all
        if start >= size:
            break
        _copy_range(fd_in, fd_out, start, end)
        copied += end - start
        position = end
    return copied


def _copy_range(fd_in: int, fd_out: int, start: int, end: int) -> None:
    offset = start
    while offset < end:
        count = min(_CHUNK_BYTES, end - offset)
        chunk = os.pread(fd_in, count, offset)
        if not chunk:  # the file shrank meanwhile
            return
        os.pwrite(fd_out, chunk, offset)
        offset += len(chunk)
