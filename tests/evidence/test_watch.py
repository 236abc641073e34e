"""Snapshots that list only what inotify reports changed are the snapshots a full walk takes.

Each test changes a real directory the way a run's commands would (and the ways inotify is
known to miss) and compares the watched store's snapshot with one taken by a store that
walks everything: the trees are content-addressed, so equal names mean equal content.
"""

from __future__ import annotations

import mmap
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from fawn.evidence import ChangeLimits, EvidenceStore
from fawn.evidence.snapshot import RACY_NS
from fawn.evidence.watch import FULL_EVERY


def store(*, watch: bool) -> EvidenceStore:
    return EvidenceStore(
        exclude=[".git", "node_modules"], keep_runs=5, limits=ChangeLimits(), watch=watch
    )


@pytest.fixture
def user_data(tmp_path: Path) -> Path:
    root = tmp_path / "threads" / "t1" / "user-data"
    (root / "workspace").mkdir(parents=True)
    (root / "outputs").mkdir()
    return root


class Pair:
    """A watched store and a walking one over the same thread."""

    def __init__(self, user_data: Path) -> None:
        self.watched_store = store(watch=True)
        assert self.watched_store.watcher is not None and self.watched_store.watcher.available
        self.watched = self.watched_store.thread(user_data)

    def check(self, user_data: Path) -> None:
        walked = store(watch=False).thread(user_data).snapshot()
        assert self.watched.snapshot().trees == walked.trees

    def close(self) -> None:
        self.watched_store.close()


@pytest.fixture
def pair(user_data: Path) -> Pair:
    made = Pair(user_data)
    made.check(user_data)  # the first snapshot walks everything and starts the watches
    yield made  # type: ignore[misc]
    made.close()


def _walk(ws: Path) -> tuple[list[Path], list[Path]]:
    """The directories and regular files a run's commands would pick from (links are not
    followed; excluded directories are left to the ``excluded`` operation)."""
    dirs: list[Path] = []
    files: list[Path] = []
    for top, subdirs, names in os.walk(ws):
        subdirs[:] = [d for d in subdirs if d != "node_modules"]
        dirs.append(Path(top))
        files += [Path(top, n) for n in names if Path(top, n).is_file()]
    files = [f for f in files if not f.is_symlink()]
    return dirs, files


def _file_op(rng: random.Random, op: str, where: Path, files: list[Path], tag: str) -> None:
    if op == "create" or not files:
        (where / f"f{tag}.txt").write_text(f"created {tag}\n" * rng.randint(1, 5))
    elif op == "edit":
        rng.choice(files).write_text(f"edited {tag}\n")
    elif op == "edit_same_size":  # same size, and the modification time put back
        target = rng.choice(files)
        st = target.stat()
        data = bytearray(target.read_bytes() or b"x")
        data[0] = (data[0] + 1) % 256
        target.write_bytes(bytes(data))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif op == "delete":
        rng.choice(files).unlink()
    elif op == "rename_file":
        rng.choice(files).rename(where / f"renamed{tag}.txt")
    elif op == "chmod_file":
        rng.choice(files).chmod(rng.choice([0o600, 0o644, 0o755]))


def _dir_op(rng: random.Random, op: str, ws: Path, where: Path, dirs: list[Path], tag: str) -> None:
    if op == "mkdir":
        (where / f"d{tag}" / "inner").mkdir(parents=True)
        (where / f"d{tag}" / "inner" / "x.txt").write_text("x\n")
    elif op == "chmod_dir":
        where.chmod(rng.choice([0o700, 0o755]))
    elif op == "symlink":
        (where / f"l{tag}").symlink_to(rng.choice(["../x", "/etc/passwd", f"t{tag}"]))
    elif op == "excluded":
        (where / "node_modules" / "pkg").mkdir(parents=True, exist_ok=True)
        (where / "node_modules" / "pkg" / f"i{tag}.js").write_text("x\n")
    elif where == ws:
        return
    elif op == "rmtree":
        shutil.rmtree(where)
    elif op == "rename_dir":
        target = rng.choice([d for d in dirs if d != where and where not in d.parents])
        where.rename(target / f"moved{tag}")
    elif op == "dir_to_file":
        shutil.rmtree(where)
        where.write_text("now a file\n")


FILE_OPS = ["create", "create", "edit", "edit_same_size", "delete", "rename_file", "chmod_file"]
DIR_OPS = ["mkdir", "rmtree", "rename_dir", "chmod_dir", "symlink", "dir_to_file", "excluded"]


def _operate(rng: random.Random, ws: Path, step: int) -> None:
    dirs, files = _walk(ws)
    tag = f"{step}-{rng.randrange(10**6)}"  # names never collide
    op = rng.choice(FILE_OPS + DIR_OPS)
    where = rng.choice(dirs)
    if op in FILE_OPS:
        _file_op(rng, op, where, files, tag)
    else:
        _dir_op(rng, op, ws, where, dirs, tag)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_file_work_snapshots_as_a_full_walk_does(
    pair: Pair, user_data: Path, seed: int
) -> None:
    rng = random.Random(seed)
    ws = user_data / "workspace"
    for step in range(80):
        for _ in range(rng.randint(1, 3)):
            _operate(rng, ws, step)
        if rng.random() < 0.3:
            (user_data / "outputs" / f"o{step % 4}.md").write_text(f"output {step}\n")
        pair.check(user_data)


def test_a_restore_is_seen_by_the_next_snapshot(pair: Pair, user_data: Path) -> None:
    ws = user_data / "workspace"
    (ws / "keep").mkdir()
    (ws / "keep" / "a.txt").write_text("a\n")
    before = pair.watched.snapshot()
    (ws / "keep" / "a.txt").write_text("changed\n")
    (ws / "new").mkdir()
    (ws / "new" / "b.txt").write_text("b\n")
    pair.check(user_data)
    pair.watched.restore(before)
    assert pair.watched.snapshot().trees == before.trees
    pair.check(user_data)


def test_an_event_queue_overflow_falls_back_to_a_full_walk(pair: Pair, user_data: Path) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    busy = user_data / "workspace" / "busy"
    busy.mkdir()
    pair.check(user_data)
    for i in range(limit // 2 + 100):  # two events each: more than the queue holds
        (busy / f"t{i}").touch()
        (busy / f"t{i}").unlink()
    (busy / "survivor.txt").write_text("kept\n")
    pair.check(user_data)


def test_a_file_changed_through_a_hard_link_outside_the_workspace_is_seen(
    pair: Pair, user_data: Path, tmp_path: Path
) -> None:
    inside = user_data / "workspace" / "shared.txt"
    inside.write_text("original\n")
    pair.check(user_data)
    outside = tmp_path / "elsewhere.txt"
    os.link(inside, outside)
    time.sleep(RACY_NS / 1e9 + 0.1)  # no longer "racy": nothing lists it again unasked
    pair.check(user_data)
    pair.check(user_data)
    outside.write_text("changed through the other link\n")  # no event in the workspace
    pair.check(user_data)


def test_a_write_through_a_kept_mapping_is_seen_by_the_periodic_full_walk(
    pair: Pair, user_data: Path
) -> None:
    """inotify reports no write through a shared mapping; the full walk every
    ``FULL_EVERY`` snapshots does see it."""
    target = user_data / "workspace" / "mapped.bin"
    target.write_bytes(b"\0" * 4096)
    pair.check(user_data)
    fd = os.open(target, os.O_RDWR)
    mapping = mmap.mmap(fd, 4096)
    os.close(fd)
    pair.check(user_data)  # the descriptor's close was reported
    try:
        mapping[:5] = b"later"
        mapping.flush()
    finally:
        mapping.close()
    walked = store(watch=False).thread(user_data).snapshot().trees
    seen = [pair.watched.snapshot().trees == walked for _ in range(FULL_EVERY)]
    assert seen[-1]


def test_without_watches_every_snapshot_walks_and_stays_right(pair: Pair, user_data: Path) -> None:
    pair.watched_store.close()  # later snapshots cannot be told what changed
    (user_data / "workspace" / "after-close.txt").write_text("x\n")
    pair.check(user_data)
