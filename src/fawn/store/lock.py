"""One owner per SQLite data directory: an advisory lock that a serving process holds.

SQLite files and the in-memory stream bridge assume one process. A second ``fawn serve`` or
an embedded client started on the same directory would split runs between two bridges and
race on the run records, so whichever process opens the services first takes an exclusive
``flock`` on ``<data_dir>/fawn.lock`` and keeps it until it shuts down. The kernel releases
it when the process dies, however it dies, so a crash never leaves a stale lock behind.
The file also names the owner's pid, for the message the next process prints.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from fawn.store.errors import StoreError

LOCK_NAME = "fawn.lock"


class DataDirInUse(StoreError):
    """Another process already owns this SQLite data directory."""

    code = "data_dir_in_use"

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        owner = f"process {pid}" if pid else "another process"
        super().__init__(
            f"the data directory {data_dir} is in use by {owner} (a fawn server or embedded "
            "client); SQLite allows one owner: connect to that server with --url, or stop it"
        )
        self.data_dir = data_dir
        self.pid = pid


def owner_pid(data_dir: Path) -> int | None:
    """The pid holding ``data_dir``'s lock (0 if unknown), or None when nobody holds it."""
    path = data_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextlib.contextmanager
def hold_data_dir(data_dir: Path) -> Iterator[None]:
    """Own ``data_dir`` until the block ends; raises `DataDirInUse` if another process does."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUse(data_dir, _read_pid(fd)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        # Closing the descriptor releases the lock.
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
