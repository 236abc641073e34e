"""Which directories changed since the last snapshot: inotify, so a snapshot walks only those.

A snapshot of a large, mostly unchanged workspace that stats every file costs a walk
(tens of milliseconds for 10,000 files, twice per run). The kernel already knows what
changed: one inotify instance per process watches every snapshotted directory (the watch is
added on the descriptor the walk opened, before the walk lists it, so nothing that happens
after the listing goes unreported), and the events mark directories *dirty* (an entry of
theirs changed) or *fresh* (a directory created, deleted or renamed there: walk it all).
A snapshot then lists and stats only the dirty directories and reuses every other
directory's tree from the stat cache.

What inotify does not see, and what fawn does about it:

- an event queue overflow, a watch that cannot be added (the ``max_user_watches`` limit),
  a watched directory renamed or deleted from above: the next snapshot walks everything;
- a file with several hard links changed through a link outside the watched directories:
  files seen with more than one link are stat-ed at every snapshot;
- writes through a shared memory mapping kept after its descriptor was closed report no
  event: every :data:`FULL_EVERY`-th snapshot of a root walks everything (as do processes
  without inotify), so such a write is seen late, never lost for good.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_DIR_ENTRY = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_HEADER = struct.Struct("iIII")

#: every this-many snapshots of a root walk everything (what no event reports is seen then)
FULL_EVERY = 16


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


@dataclass
class Plan:
    """What one snapshot of a root must walk."""

    #: walk everything (no trustworthy record of what changed)
    full: bool
    #: directories whose entries must be listed and stat-ed again
    dirty: set[str] = field(default_factory=set)
    #: directories to walk entirely (created, deleted, renamed)
    fresh: set[str] = field(default_factory=set)

    def descend(self) -> set[str]:
        """The dirty and fresh directories and all their ancestors (``""``: the root)."""
        out: set[str] = set()
        for rel in self.dirty | self.fresh:
            out.add(rel)
            while rel:
                rel = rel.rpartition("/")[0]
                out.add(rel)
        return out


@dataclass(eq=False)
class RootWatch:
    """The change record of one snapshotted directory (a thread's ``workspace/``, ...)."""

    root: str
    dirty: set[str] = field(default_factory=set)
    fresh: set[str] = field(default_factory=set)
    #: nothing trustworthy is known: the next snapshot walks everything
    lost: bool = True
    snapshots: int = 0
    #: files with several hard links: path → the stat facts they had
    linked: dict[str, tuple[int, int, int, int, int]] = field(default_factory=dict)
    wds: set[int] = field(default_factory=set)


class Watcher:
    """One inotify instance for the process (created on first use; without inotify, or
    when the kernel refuses another instance, every snapshot walks everything)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._tried = False
        self._libc: ctypes.CDLL | None = None
        self._wds: dict[int, tuple[RootWatch, str]] = {}
        self._roots: set[RootWatch] = set()
        self._closer: weakref.finalize[Any, Any] | None = None

    @property
    def available(self) -> bool:
        with self._lock:
            return self._open() is not None

    def _open(self) -> int | None:
        if not self._tried:
            self._tried = True
            self._libc = _libc()
            if self._libc is not None:
                fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
                if fd >= 0:
                    self._fd = fd
                    self._closer = weakref.finalize(self, os.close, fd)
        return self._fd

    def close(self) -> None:
        with self._lock:
            if self._closer is not None:
                self._closer()
            self._fd, self._closer = None, None
            self._wds.clear()
            for watch in self._roots:
                watch.lost = True
                watch.wds.clear()
            self._roots.clear()

    # -- a snapshot's side -------------------------------------------------------------------

    def begin(self, watch: RootWatch) -> Plan:
        """What the snapshot of ``watch.root`` starting now must walk (what changed is
        collected first; what changes from now on is reported to the next snapshot)."""
        with self._lock:
            self._roots.add(watch)
            watch.snapshots += 1
            if self._open() is None or watch.lost or watch.snapshots % FULL_EVERY == 0:
                watch.lost = False
                watch.dirty.clear()
                watch.fresh.clear()
                return Plan(full=True)
            self._drain()
            self._check_links(watch)
            if watch.lost:
                watch.lost = False
                watch.dirty.clear()
                watch.fresh.clear()
                return Plan(full=True)
            plan = Plan(full=False, dirty=watch.dirty, fresh=watch.fresh)
            watch.dirty, watch.fresh = set(), set()
            return plan

    def add(self, watch: RootWatch, rel: str, dir_fd: int) -> None:
        """Watch directory ``rel`` (open as ``dir_fd``) before the walk lists it."""
        with self._lock:
            if self._fd is None or self._libc is None:
                watch.lost = True
                return
            path = f"/proc/self/fd/{dir_fd}".encode()
            wd = self._libc.inotify_add_watch(self._fd, path, _MASK)
            if wd < 0:  # over the watch limit, or gone: no record, walk all next time
                watch.lost = True
                return
            self._wds[wd] = (watch, rel)
            watch.wds.add(wd)

    def recheck(self, watch: RootWatch, rel: str) -> None:
        """Have the next snapshot list ``rel`` again (something in it could not be
        trusted: a file modified as it was read)."""
        with self._lock:
            watch.dirty.add(rel)

    def linked(self, watch: RootWatch, path: str, key: tuple[int, int, int, int, int]) -> None:
        with self._lock:
            watch.linked[path] = key

    def forget(self, watch: RootWatch) -> None:
        """Stop watching ``watch``'s directories (its cache is gone)."""
        with self._lock:
            self._roots.discard(watch)
            for wd in watch.wds:
                if self._wds.pop(wd, (None, ""))[0] is watch and self._fd is not None:
                    assert self._libc is not None
                    self._libc.inotify_rm_watch(self._fd, wd)
            watch.wds.clear()
            watch.lost = True

    # -- events ------------------------------------------------------------------------------

    def _drain(self) -> None:
        assert self._fd is not None
        while True:
            try:
                data = os.read(self._fd, 256 * 1024)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            offset = 0
            while offset + _HEADER.size <= len(data):
                wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = data[start : start + length].split(b"\0", 1)[0]
                offset = start + length
                self._event(wd, mask, os.fsdecode(name))

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:
            for watch in self._roots:
                watch.lost = True
            return
        found = self._wds.get(wd)
        if found is None:
            return
        watch, rel = found
        if mask & IN_IGNORED:  # the directory is gone (its parent reported it)
            del self._wds[wd]
            watch.wds.discard(wd)
            return
        if mask & (IN_MOVE_SELF | IN_DELETE_SELF):
            if not rel:
                watch.lost = True  # the root itself went away
                return
            # renamed (or deleted) from above: this watch no longer names ``rel``
            del self._wds[wd]
            watch.wds.discard(wd)
            if mask & IN_MOVE_SELF and self._fd is not None and self._libc is not None:
                self._libc.inotify_rm_watch(self._fd, wd)
            watch.fresh.add(rel)
            watch.dirty.add(rel.rpartition("/")[0])
            return
        if not name:  # the directory's own attributes: its entry in its parent
            watch.dirty.add(rel)
            if rel:
                watch.dirty.add(rel.rpartition("/")[0])
            return
        watch.dirty.add(rel)
        if mask & IN_ISDIR and mask & _DIR_ENTRY:
            watch.fresh.add(f"{rel}/{name}" if rel else name)

    def _check_links(self, watch: RootWatch) -> None:
        """Files with several links can change through a link nobody watches."""
        for path, key in list(watch.linked.items()):
            try:
                st = os.lstat(os.path.join(watch.root, path))
                now = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
            except OSError:
                now = None
            if now != key:
                watch.dirty.add(path.rpartition("/")[0])
                del watch.linked[path]
