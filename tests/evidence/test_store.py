"""The evidence store on real directories: snapshots, changes, restore, retention."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fawn.evidence import ChangeLimits, EvidenceStore, SnapshotMissing
from tests.evidence.evidence_helpers import tree_digest

WS = "/mnt/user-data/workspace"
OUT = "/mnt/user-data/outputs"


def store(**limits: int) -> EvidenceStore:
    return EvidenceStore(
        exclude=[".git", "node_modules"], keep_runs=2, limits=ChangeLimits(**limits)
    )


@pytest.fixture
def user_data(tmp_path: Path) -> Path:
    root = tmp_path / "threads" / "t1" / "user-data"
    (root / "workspace").mkdir(parents=True)
    (root / "outputs").mkdir()
    (root / "uploads").mkdir()
    return root


def test_changes_list_files_and_links_never_read_through_links(
    user_data: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    ws = user_data / "workspace"
    (ws / "a.txt").write_text("one\n")
    thread = store().thread(user_data)
    before = thread.snapshot()

    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "leak").symlink_to(secret)
    os.mkfifo(ws / "pipe")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref\n")
    (ws / ".fawn").mkdir()
    (ws / ".fawn" / "out.txt").write_text("cached tool output\n")
    (ws / "sub" / ".fawn").mkdir(parents=True)
    (ws / "sub" / ".fawn" / "x").write_text("x\n")  # only the top-level .fawn is fawn's
    (user_data / "uploads" / "u.csv").write_text("u\n")
    changes = thread.changes(before, thread.snapshot())

    assert changes.as_json() == {
        "added": [
            {
                "path": f"{WS}/leak",
                "type": "symlink",
                "size_before": None,
                "size_after": None,
                "diff": None,
                "target": str(secret),
                "diff_omitted": "symlink",
            },
            {
                "path": f"{WS}/sub/.fawn/x",
                "type": "file",
                "size_before": None,
                "size_after": 2,
                "diff": f"--- /dev/null\n+++ {WS}/sub/.fawn/x\n@@ -0,0 +1 @@\n+x\n",
            },
        ],
        "modified": [
            {
                "path": f"{WS}/a.txt",
                "type": "file",
                "size_before": 4,
                "size_after": 8,
                "diff": f"--- {WS}/a.txt\n+++ {WS}/a.txt\n@@ -1 +1,2 @@\n one\n+two\n",
            }
        ],
        "deleted": [],
    }
    stored = b"".join(p.read_bytes() for p in thread.objects.root.rglob("*") if p.is_file())
    assert b"top secret" not in stored


def test_diff_limits_leave_metadata_only(user_data: Path) -> None:
    out = user_data / "outputs"
    thread = store(diff_max_file_bytes=200, diff_max_chars=60, diff_total_chars=150).thread(
        user_data
    )
    before = thread.snapshot()
    (out / "big.txt").write_text("x" * 201)
    (out / "long.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    (out / "more.txt").write_text("".join(f"more {i}\n" for i in range(20)))
    (out / "last.txt").write_text("last\n")
    (out / "bad.txt").write_bytes(b"\xff\xfe latin?")
    (out / "z.txt").write_text("past the budget\n")

    added = {c.path: c for c in thread.changes(before, thread.snapshot()).added}

    assert (added[f"{OUT}/big.txt"].diff, added[f"{OUT}/big.txt"].diff_omitted) == (
        None,
        "too_large",
    )
    assert added[f"{OUT}/bad.txt"].diff_omitted == "binary"
    long = added[f"{OUT}/long.txt"]
    assert long.diff_truncated and long.diff is not None and len(long.diff) <= 60
    assert long.diff.startswith(f"--- /dev/null\n+++ {OUT}/long.txt\n")
    used = sum(len(c.diff or "") for c in added.values())
    assert used <= 150
    assert (added[f"{OUT}/z.txt"].diff, added[f"{OUT}/z.txt"].diff_omitted) == (None, "budget")


def test_restore_undoes_edits_deletions_creations_and_modes(user_data: Path) -> None:
    ws = user_data / "workspace"
    (ws / "keep").mkdir()
    (ws / "keep" / "a.txt").write_text("A\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    (ws / "link").symlink_to("keep/a.txt")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "dep.js").write_text("v1\n")
    (user_data / "outputs" / "r.md").write_text("# R\n")
    thread = store().thread(user_data)
    snapshot = thread.snapshot()
    thread.record("run-1", snapshot)
    expected = tree_digest(user_data)

    (ws / "keep" / "a.txt").write_text("changed\n")
    os.chmod(ws / "run.sh", 0o644)
    (ws / "link").unlink()
    (ws / "link").mkdir()  # a link became a directory
    (ws / "keep" / "new").mkdir()
    (ws / "keep" / "new" / "deep.txt").write_text("new\n")
    (user_data / "outputs" / "r.md").unlink()
    (user_data / "outputs" / "r.md").symlink_to("/etc/passwd")  # a file became a link
    (ws / "node_modules" / "dep.js").write_text("v2\n")
    thread.snapshot()  # the stat cache now vouches for the changed state

    touched = thread.restore(thread.before("run-1"))

    after = tree_digest(user_data)
    assert after.pop("workspace/node_modules/dep.js") != expected.pop(
        "workspace/node_modules/dep.js"
    )  # excluded: left as the run left it
    assert after == expected
    assert touched == 5
    assert thread.restore(thread.before("run-1")) == 0  # idempotent
    assert thread.snapshot() == snapshot


def test_a_file_changed_within_the_timestamp_granularity_is_seen(user_data: Path) -> None:
    """Same size, same mtime (set back), same inode: the racy entry is hashed again."""
    path = user_data / "workspace" / "f.txt"
    path.write_text("aaaa\n")
    thread = store().thread(user_data)
    first = thread.snapshot()
    st = path.stat()
    with open(path, "r+") as handle:  # same inode, same size
        handle.write("bbbb\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    second = thread.snapshot()

    assert second != first
    (change,) = thread.changes(first, second).modified
    assert change.diff is not None and "+bbbb" in change.diff


def test_retention_prunes_old_runs_and_content_only_they_held(user_data: Path) -> None:
    path = user_data / "outputs" / "r.md"
    thread = store().thread(user_data)  # keep_runs=2: prunes once there are more than 4
    for run in range(5):
        path.write_text(f"version {run}\n")
        thread.record(f"run-{run}", thread.snapshot())
        os.utime(thread.objects.root.parent / "runs" / f"run-{run}.json", ns=(run, run))

    removed = thread.prune()

    assert removed > 0
    with pytest.raises(SnapshotMissing):
        thread.before("run-0")
    for run in (3, 4):  # the kept ones still restore
        path.write_text("scribbled\n")
        thread.restore(thread.before(f"run-{run}"))
        assert path.read_text() == f"version {run}\n"
    assert thread.prune() == 0


def test_files_over_the_size_limit_are_listed_not_stored_nor_restored(user_data: Path) -> None:
    ws = user_data / "workspace"
    (ws / "big.bin").write_bytes(b"B" * 64)
    (ws / "small.txt").write_text("s\n")
    thread = EvidenceStore(
        exclude=[], keep_runs=2, limits=ChangeLimits(), max_file_bytes=32
    ).thread(user_data)
    before = thread.snapshot()
    thread.record("run-1", before)

    (ws / "big.bin").write_bytes(b"C" * 65)
    (ws / "small.txt").write_text("changed\n")
    (change_big, change_small) = thread.changes(before, thread.snapshot()).modified
    thread.restore(thread.before("run-1"))

    assert (change_big.path, change_big.size_before, change_big.size_after) == (
        f"{WS}/big.bin",
        64,
        65,
    )
    assert (change_big.diff, change_big.diff_omitted) == (None, "too_large")
    assert change_small.path == f"{WS}/small.txt"
    assert (ws / "small.txt").read_text() == "s\n"
    assert (ws / "big.bin").read_bytes() == b"C" * 65  # not stored: not restored
    stored = b"".join(p.read_bytes() for p in thread.objects.root.rglob("*") if p.is_file())
    assert b"B" * 64 not in stored and b"C" * 65 not in stored


def test_names_that_are_not_utf8_are_listed_as_valid_text(user_data: Path) -> None:
    ws = os.fsencode(user_data / "workspace")
    thread = store().thread(user_data)
    before = thread.snapshot()
    with open(ws + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"x\n")
    os.symlink(b"\xff", ws + b"/odd")

    added = thread.changes(before, thread.snapshot()).added

    assert [(c.path, c.target) for c in added] == [
        (f"{WS}/caf\ufffd.txt", None),
        (f"{WS}/odd", "\ufffd"),
    ]
    assert json.dumps([c.as_json() for c in added]).isascii()
