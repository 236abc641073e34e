"""Making a directory equal to a snapshot again: edits undone, deletions restored,
creations removed; excluded entries (caches) are left as they are.

Only what differs is touched: an entry is compared with the snapshot by the stat cache's
hash (a file whose stat facts changed is hashed again), and a restored file is written
beside its final name and renamed over it. Every step goes through directory descriptors
opened with ``O_NOFOLLOW``, so a symlink the run planted is removed, never written through.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat

from fawn.evidence.objects import ObjectStore, TreeEntry
from fawn.evidence.snapshot import UNSTORED, Excluded, StatCache, StatKey

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def restore_dir(
    root: str, tree: str, store: ObjectStore, cache: StatCache, excluded: Excluded
) -> int:
    """Make ``root`` hold exactly ``tree``; how many entries were written or removed."""
    os.makedirs(root, exist_ok=True)
    fd = os.open(root, _DIR_FLAGS)
    try:
        return _restore(fd, "", tree, store, cache, excluded)
    finally:
        os.close(fd)


def _restore(
    dir_fd: int, rel: str, tree: str, store: ObjectStore, cache: StatCache, excluded: Excluded
) -> int:
    wanted = {e[0]: e for e in store.tree(tree)}
    with os.scandir(dir_fd) as it:
        present = [e.name for e in it if not excluded(rel, e.name)]
    touched = 0
    for name in present:
        if name not in wanted:
            _remove(dir_fd, name)
            touched += 1
    for name, entry in sorted(wanted.items()):
        path = f"{rel}/{name}" if rel else name
        touched += _put(dir_fd, path, entry, store, cache, excluded)
    return touched


def _put(
    dir_fd: int,
    path: str,
    entry: TreeEntry,
    store: ObjectStore,
    cache: StatCache,
    excluded: Excluded,
) -> int:
    name, kind, mode, ref, _size = entry
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if kind == "d":
        return _put_dir(dir_fd, path, entry, st, store, cache, excluded)
    if kind == "l":
        if st is not None and stat.S_ISLNK(st.st_mode) and os.readlink(name, dir_fd=dir_fd) == ref:
            return 0
        if st is not None:
            _remove(dir_fd, name)
        os.symlink(ref, name, dir_fd=dir_fd)
        return 1
    if ref.startswith(UNSTORED):
        return 0  # too large to have been stored: left as it is (README)
    if (
        st is not None
        and stat.S_ISREG(st.st_mode)
        and _same_file(dir_fd, name, path, st, ref, cache)
    ):
        if stat.S_IMODE(st.st_mode) == mode:
            return 0
        _chmod_file(dir_fd, name, mode)
        return 1
    _write(dir_fd, name, ref, mode, store)
    return 1


def _put_dir(
    dir_fd: int,
    path: str,
    entry: TreeEntry,
    st: os.stat_result | None,
    store: ObjectStore,
    cache: StatCache,
    excluded: Excluded,
) -> int:
    name, _kind, mode, ref, _size = entry
    touched = 0
    if st is None or not stat.S_ISDIR(st.st_mode):
        if st is not None:
            _remove(dir_fd, name)
        os.mkdir(name, 0o700, dir_fd=dir_fd)
        touched = 1
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        current = stat.S_IMODE(os.fstat(fd).st_mode)
        if current & 0o700 != 0o700:  # writable while its entries are restored
            os.fchmod(fd, current | 0o700)
        touched += _restore(fd, path, ref, store, cache, excluded)
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)
        return touched
    finally:
        os.close(fd)


def _same_file(
    dir_fd: int, name: str, path: str, st: os.stat_result, ref: str, cache: StatCache
) -> bool:
    key: StatKey = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
    cached = cache.files.get(path)
    if cached is not None and cached[0] == key:
        return cached[1] == ref
    digest = hashlib.sha256()
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == ref


def _chmod_file(dir_fd: int, name: str, mode: int) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _write(dir_fd: int, name: str, blob: str, mode: int, store: ObjectStore) -> None:
    temp = f".fawn-restore-{secrets.token_hex(6)}"
    fd = os.open(
        temp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o600,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb", closefd=False) as out:
            for chunk in store.chunks(blob):
                out.write(chunk)
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    os.close(fd)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        _remove(dir_fd, name)
    os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _remove(dir_fd: int, name: str) -> None:
    """Remove an entry of ``dir_fd`` (a whole directory tree, without following links)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)
