"""What changed between two snapshots: added, modified and deleted files, with diffs.

Only differing subtrees are visited (equal tree names are equal content), so comparing two
snapshots of a large workspace where a few files changed reads a few trees. Text diffs are
unified diffs, limited per file and per run; binary and large files are described by their
metadata only.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from fawn.evidence.objects import ObjectStore, TreeEntry
from fawn.evidence.snapshot import UNSTORED

ChangeKind = Literal["added", "modified", "deleted"]


@dataclass(frozen=True, kw_only=True)
class ChangeLimits:
    #: a file larger than this (before or after) gets no diff
    diff_max_file_bytes: int = 256 * 1024
    #: one file's diff is cut at this many characters
    diff_max_chars: int = 64 * 1024
    #: all diffs of one run together stop at this many characters (later files: metadata)
    diff_total_chars: int = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Change:
    kind: ChangeKind
    #: the path as the agent sees it (``/mnt/user-data/outputs/report.md``)
    path: str
    #: ``file`` or ``symlink``
    type: str
    size_before: int | None
    size_after: int | None
    #: the symlink's target after (or before, when deleted)
    target: str | None = None
    #: a modified symlink's target before
    target_before: str | None = None
    blob_before: str | None = None
    blob_after: str | None = None
    diff: str | None = None
    #: why there is no diff: ``binary``, ``too_large``, ``budget``, ``symlink``, ``mode``
    diff_omitted: str | None = None
    diff_truncated: bool = False

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "type": self.type,
            "size_before": self.size_before,
            "size_after": self.size_after,
            "diff": self.diff,
        }
        if self.target is not None:
            data["target"] = self.target
        if self.target_before is not None:
            data["target_before"] = self.target_before
        if self.diff_omitted is not None:
            data["diff_omitted"] = self.diff_omitted
        if self.diff_truncated:
            data["diff_truncated"] = True
        return data


@dataclass(frozen=True, kw_only=True)
class Changes:
    added: list[Change] = field(default_factory=list)
    modified: list[Change] = field(default_factory=list)
    deleted: list[Change] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted)

    def as_json(self) -> dict[str, Any]:
        return {
            "added": [c.as_json() for c in self.added],
            "modified": [c.as_json() for c in self.modified],
            "deleted": [c.as_json() for c in self.deleted],
        }


#: a changed path: (relative path, entry before, entry after); directories are expanded
Delta = tuple[str, TreeEntry | None, TreeEntry | None]


def tree_delta(
    store: ObjectStore, before: str | None, after: str | None, rel: str = ""
) -> Iterator[Delta]:
    """Files and symlinks that differ between two trees (None: an empty directory)."""
    if before == after:
        return
    old = {e[0]: e for e in store.tree(before)} if before else {}
    new = {e[0]: e for e in store.tree(after)} if after else {}
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        path = f"{rel}/{name}" if rel else name
        a_dir = a is not None and a[1] == "d"
        b_dir = b is not None and b[1] == "d"
        if a_dir or b_dir:
            yield from tree_delta(
                store,
                a[3] if a is not None and a_dir else None,
                b[3] if b is not None and b_dir else None,
                path,
            )
            if a is not None and not a_dir:
                yield (path, a, None)
            if b is not None and not b_dir:
                yield (path, None, b)
            continue
        if a is not None and b is not None and a[1] != b[1]:  # a file became a link, say
            yield (path, a, None)
            yield (path, None, b)
            continue
        yield (path, a, b)


class _Budget:
    def __init__(self, limits: ChangeLimits) -> None:
        self.limits = limits
        self.left = limits.diff_total_chars


def describe(
    store: ObjectStore,
    deltas: Iterator[Delta],
    prefix: str,
    limits: ChangeLimits,
    budget: _Budget | None = None,
) -> Changes:
    """The deltas as :class:`Changes`, paths under the virtual ``prefix``."""
    budget = budget or _Budget(limits)
    changes = Changes()
    for rel, a, b in deltas:
        kind: ChangeKind = "added" if a is None else "deleted" if b is None else "modified"
        change = _change(store, kind, printable(f"{prefix}/{rel}"), a, b, budget)
        getattr(changes, kind).append(change)
    return changes


def new_budget(limits: ChangeLimits) -> _Budget:
    return _Budget(limits)


def _change(
    store: ObjectStore,
    kind: ChangeKind,
    path: str,
    a: TreeEntry | None,
    b: TreeEntry | None,
    budget: _Budget,
) -> Change:
    some = b if b is not None else a
    assert some is not None
    if some[1] == "l":
        return Change(
            kind=kind,
            path=path,
            type="symlink",
            size_before=None,
            size_after=None,
            target=printable(some[3]),
            target_before=printable(a[3]) if a is not None and b is not None else None,
            diff_omitted="symlink",
        )
    blob_a = a[3] if a is not None else None
    blob_b = b[3] if b is not None else None
    base = {
        "kind": kind,
        "path": path,
        "type": "file",
        "size_before": a[4] if a is not None else None,
        "size_after": b[4] if b is not None else None,
        "blob_before": blob_a,
        "blob_after": blob_b,
    }
    if blob_a == blob_b:
        return Change(**base, diff_omitted="mode")  # type: ignore[arg-type]
    diff, omitted, truncated = _diff(store, path, a, b, budget)
    return Change(**base, diff=diff, diff_omitted=omitted, diff_truncated=truncated)  # type: ignore[arg-type]


def _diff(
    store: ObjectStore,
    path: str,
    a: TreeEntry | None,
    b: TreeEntry | None,
    budget: _Budget,
) -> tuple[str | None, str | None, bool]:
    limits = budget.limits
    if any(
        e is not None and (e[4] > limits.diff_max_file_bytes or e[3].startswith(UNSTORED))
        for e in (a, b)
    ):
        return None, "too_large", False
    if budget.left <= 0:
        return None, "budget", False
    texts: list[list[str]] = []
    for entry in (a, b):
        if entry is None:
            texts.append([])
            continue
        text = _text(store.read(entry[3]))
        if text is None:
            return None, "binary", False
        texts.append(text.splitlines(keepends=True))
    lines = difflib.unified_diff(
        texts[0],
        texts[1],
        fromfile=path if a is not None else "/dev/null",
        tofile=path if b is not None else "/dev/null",
    )
    cap = min(limits.diff_max_chars, budget.left)
    out: list[str] = []
    used = 0
    truncated = False
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        if used + len(line) > cap:
            truncated = True
            break
        out.append(line)
        used += len(line)
    budget.left -= used
    return "".join(out), None, truncated


def printable(name: str) -> str:
    """A file name as valid text: bytes that are not UTF-8 (kept by the OS as lone
    surrogates, which no JSON store accepts) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
