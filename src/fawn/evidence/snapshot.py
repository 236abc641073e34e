"""Snapshotting a directory into trees, hashing only what the stat cache cannot vouch for.

The stat cache (one per snapshotted directory) maps each file's relative path to the
``lstat`` facts seen when it was last hashed (size, mtime, ctime, inode, mode) and the
hash. A file whose facts are unchanged is not read again. As in git's index, a file
modified within the timestamp granularity of the moment it was hashed could keep the same
facts: such "racy" entries are not trusted by the next snapshot, which hashes them again.

Each directory's tree is kept too, with the entries it was made from: a directory whose
entries are unchanged reuses its tree without serializing it again, so a snapshot of an
unchanged workspace writes nothing at all.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from fawn.evidence.objects import ObjectStore, Tree, TreeEntry
from fawn.evidence.watch import Plan, RootWatch, Watcher

#: stat facts that vouch for a cached hash
StatKey = tuple[int, int, int, int, int]

#: a file modified this close to (or after) the start of a snapshot is hashed again next time
RACY_NS = 2_000_000_000

#: the ref of a file too large to store: its identity is its stat facts
UNSTORED = "unstored:"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Excluded:
    """Entries never snapshotted: ``names`` at any depth, ``internal`` at the top only."""

    names: frozenset[str]
    internal: str | None = None

    def __call__(self, rel: str, name: str) -> bool:
        return name in self.names or (rel == "" and name == self.internal)


@dataclass
class StatCache:
    """What the last snapshot of one directory saw."""

    files: dict[str, tuple[StatKey | None, str]] = field(default_factory=dict)
    dirs: dict[str, tuple[Tree, str]] = field(default_factory=dict)


@dataclass
class _Walk:
    store: ObjectStore
    old: StatCache
    new: StatCache
    excluded: Excluded
    racy_after: int
    max_file_bytes: int | None = None
    hashed: int = 0
    #: what changed since the last snapshot (a full plan: nothing known, walk everything)
    plan: Plan = field(default_factory=lambda: Plan(full=True))
    descend: set[str] = field(default_factory=set)
    watcher: Watcher | None = None
    watch: RootWatch | None = None
    #: directories holding a file that could change unseen: listed again next time
    racy: set[str] = field(default_factory=set)

    @property
    def in_place(self) -> bool:
        return self.new is self.old


def snapshot_dir(
    root: str,
    store: ObjectStore,
    cache: StatCache,
    excluded: Excluded,
    max_file_bytes: int | None = None,
    *,
    watcher: Watcher | None = None,
    watch: RootWatch | None = None,
) -> str:
    """The tree name of directory ``root`` (created empty if missing); ``cache`` is updated
    in place to what this snapshot saw. Files over ``max_file_bytes`` are recorded by their
    stat facts only (:data:`UNSTORED`): changes see them, a restore leaves them as they are.

    With a ``watcher``, only the directories it reports changed since the last snapshot
    of ``watch`` are listed (:mod:`fawn.evidence.watch`); every other one's tree comes from
    ``cache``."""
    os.makedirs(root, exist_ok=True)
    plan = watcher.begin(watch) if watcher is not None and watch is not None else Plan(True)
    if not plan.full and "" not in cache.dirs:
        plan = Plan(full=True)
    fd = os.open(root, _DIR_FLAGS)
    walk = _Walk(
        store=store,
        old=cache,
        new=StatCache() if plan.full else cache,
        excluded=excluded,
        racy_after=time.time_ns() - RACY_NS,
        max_file_bytes=max_file_bytes,
        plan=plan,
        descend=plan.descend(),
        watcher=watcher,
        watch=watch,
    )
    try:
        name = _tree(walk, fd, "", plan.full)
    finally:
        os.close(fd)
    if not walk.in_place:
        cache.files, cache.dirs = walk.new.files, walk.new.dirs
    if watcher is not None and watch is not None:
        for rel in walk.racy:
            watcher.recheck(watch, rel)
    return name


def _tree(walk: _Walk, dir_fd: int, rel: str, whole: bool) -> str:
    """The tree name of directory ``rel``: reused from the cache when nothing in it changed,
    rebuilt from the cache when only something below it did, else listed (``whole``:
    everything below it is listed too)."""
    if not whole and rel in walk.plan.fresh:
        whole = True
    if not whole and rel not in walk.descend:
        cached = walk.old.dirs.get(rel)
        if cached is not None:
            return cached[1]
        whole = True  # never seen: nothing to reuse
    if whole or rel in walk.plan.dirty:
        return _scan(walk, dir_fd, rel, whole)
    return _rebuild(walk, dir_fd, rel)


def _rebuild(walk: _Walk, dir_fd: int, rel: str) -> str:
    """A directory whose own entries did not change: its cached entries, with the trees of
    the subdirectories that did change made again."""
    cached = walk.old.dirs.get(rel)
    if cached is None:
        return _scan(walk, dir_fd, rel, True)
    prefix = f"{rel}/" if rel else ""
    entries: list[TreeEntry] = []
    for entry in cached[0]:
        name, kind, mode, ref, size = entry
        path = prefix + name
        if kind != "d" or path not in walk.descend:
            entries.append(entry)
            continue
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError:  # changed in a way not reported yet: list this directory
            return _scan(walk, dir_fd, rel, False)
        try:
            entries.append((name, kind, mode, _tree(walk, fd, path, False), size))
        finally:
            os.close(fd)
    return _keep_tree(walk, rel, tuple(entries))


def _keep_tree(walk: _Walk, rel: str, tree: Tree) -> str:
    cached_tree = walk.old.dirs.get(rel)
    if cached_tree is not None and cached_tree[0] == tree:
        tree_name = cached_tree[1]
    else:
        tree_name = walk.store.put_tree(tree)
    walk.new.dirs[rel] = (tree, tree_name)
    return tree_name


def _scan(walk: _Walk, dir_fd: int, rel: str, whole: bool) -> str:
    if walk.watcher is not None and walk.watch is not None:
        walk.watcher.add(walk.watch, rel, dir_fd)  # before listing: no change goes unseen
    before = walk.old.dirs.get(rel) if walk.in_place else None
    with os.scandir(dir_fd) as it:
        items = sorted(it, key=_name)
    old_files, new_files = walk.old.files, walk.new.files
    names, internal = walk.excluded.names, walk.excluded.internal
    prefix = f"{rel}/" if rel else ""
    entries: list[TreeEntry] = []
    for item in items:
        name = item.name
        if name in names or (not rel and name == internal):
            continue
        try:
            st = item.stat(follow_symlinks=False)  # fstatat on the directory descriptor
        except FileNotFoundError:
            continue
        mode = st.st_mode
        path = prefix + name
        if stat.S_ISREG(mode):
            key = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, mode)
            if st.st_nlink > 1 and walk.watcher is not None and walk.watch is not None:
                walk.watcher.linked(walk.watch, path, key)
            # the hot path: an unchanged file costs this lstat and a dictionary lookup
            cached = old_files.get(path)
            if cached is not None and cached[0] == key:
                new_files[path] = cached
                entries.append((name, "f", mode & 0o7777, cached[1], st.st_size))
                continue
            entry = _file(walk, dir_fd, path, name, st)
        else:
            entry = _other(walk, dir_fd, path, name, st, whole)
        if entry is not None:
            entries.append(entry)
    tree = tuple(entries)
    if before is not None:
        _forget_gone(walk.new, prefix, before[0], tree)
    return _keep_tree(walk, rel, tree)


def _forget_gone(cache: StatCache, prefix: str, before: Tree, now: Tree) -> None:
    """Drop what an in-place cache holds for the entries of one directory that are gone
    (or changed kind) since it was last listed."""
    kinds = {e[0]: e[1] for e in now}
    for name, kind, _mode, _ref, _size in before:
        if kinds.get(name) == kind:
            continue
        path = prefix + name
        if kind == "f":
            cache.files.pop(path, None)
        elif kind == "d":
            below = path + "/"
            for gone in [p for p in cache.files if p.startswith(below)]:
                del cache.files[gone]
            for gone in [p for p in cache.dirs if p == path or p.startswith(below)]:
                del cache.dirs[gone]


def _name(item: os.DirEntry[str]) -> str:
    return item.name


def _other(
    walk: _Walk, dir_fd: int, path: str, name: str, st: os.stat_result, whole: bool
) -> TreeEntry | None:
    """A symlink (recorded, never followed), a directory (walked), or nothing."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            return None
        return (name, "l", 0, target, 0)
    if stat.S_ISDIR(mode):
        if not whole and path not in walk.descend and path in walk.old.dirs:
            return (name, "d", stat.S_IMODE(mode), walk.old.dirs[path][1], 0)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError:  # replaced meanwhile
            return None
        try:
            return (name, "d", stat.S_IMODE(mode), _tree(walk, fd, path, whole), 0)
        finally:
            os.close(fd)
    return None  # sockets, FIFOs, devices: not content


def _file(walk: _Walk, dir_fd: int, path: str, name: str, st: os.stat_result) -> TreeEntry | None:
    key: StatKey = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
    trusted: StatKey | None = key
    cached = walk.old.files.get(path)
    if cached is not None and cached[0] == key:
        digest, size = cached[1], st.st_size
    elif walk.max_file_bytes is not None and st.st_size > walk.max_file_bytes:
        digest, size = f"{UNSTORED}{st.st_size}:{st.st_mtime_ns}:{st.st_ino}", st.st_size
    else:
        stored = walk.store.put_file(dir_fd, name)
        if stored is None:
            return None
        digest, size = stored
        walk.hashed += 1
        if max(st.st_mtime_ns, st.st_ctime_ns) >= walk.racy_after or size != st.st_size:
            trusted = None  # changed as it was read, or may change unseen: hash it next time
            walk.racy.add(path.rpartition("/")[0])
    walk.new.files[path] = (trusted, digest)
    return (name, "f", stat.S_IMODE(st.st_mode), digest, size)
