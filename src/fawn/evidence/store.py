"""One thread's evidence: snapshots per run, changes between them, restore, retention.

Layout, beside the thread's ``user-data`` (so deleting the thread deletes it)::

    <thread>/evidence/objects/…          blobs and trees
    <thread>/evidence/runs/<run_id>.json  the run's snapshot: a tree per root

The stat caches live in memory, one per thread (bounded): after a restart the first
snapshot of a thread hashes its files once more (nothing is written again: the objects are
there). While a thread's cache is kept, inotify tells which of its directories changed
(:mod:`fawn.evidence.watch`), so a snapshot lists only those. Everything here is blocking file work: callers run it in a worker thread.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fawn.evidence.changes import ChangeLimits, Changes, describe, new_budget, tree_delta
from fawn.evidence.errors import SnapshotMissing
from fawn.evidence.objects import ObjectStore
from fawn.evidence.restore import restore_dir
from fawn.evidence.snapshot import Excluded, StatCache, snapshot_dir
from fawn.evidence.watch import RootWatch, Watcher

#: the snapshotted roots: name → virtual path prefix
ROOTS = {"workspace": "/mnt/user-data/workspace", "outputs": "/mnt/user-data/outputs"}
#: fawn's tool-output cache, at the top of the workspace
_INTERNAL = ".fawn"
_KEEP_CACHES = 256


@dataclass(frozen=True)
class RunSnapshot:
    """The tree of each root at one moment."""

    trees: dict[str, str]


@dataclass
class _ThreadState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    caches: dict[str, StatCache] = field(default_factory=dict)
    watches: dict[str, RootWatch] = field(default_factory=dict)


class EvidenceStore:
    """Every thread's evidence, with one stat cache per thread kept in memory."""

    def __init__(
        self,
        *,
        exclude: Iterable[str],
        keep_runs: int,
        limits: ChangeLimits,
        max_file_bytes: int | None = None,
        watch: bool = True,
    ) -> None:
        self._exclude = frozenset(exclude)
        #: reports which directories changed, so a snapshot lists only those
        self.watcher = Watcher() if watch else None
        self.max_file_bytes = max_file_bytes
        self.keep_runs = keep_runs
        self.limits = limits
        self._states: OrderedDict[str, _ThreadState] = OrderedDict()
        self._guard = threading.Lock()

    def thread(self, user_data: Path) -> ThreadEvidence:
        """The evidence of the thread whose files are under ``user_data``."""
        key = str(user_data)
        with self._guard:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = _ThreadState()
            self._states.move_to_end(key)
            while len(self._states) > _KEEP_CACHES:
                _key, gone = self._states.popitem(last=False)
                self._unwatch(gone)
        return ThreadEvidence(self, user_data, state)

    def close(self) -> None:
        """Stop watching (later snapshots walk everything)."""
        if self.watcher is not None:
            self.watcher.close()

    def _unwatch(self, state: _ThreadState) -> None:
        if self.watcher is not None:
            with state.lock:
                for watch in state.watches.values():
                    self.watcher.forget(watch)

    def excluded(self, root: str) -> Excluded:
        return Excluded(self._exclude, internal=_INTERNAL if root == "workspace" else None)


class ThreadEvidence:
    def __init__(self, store: EvidenceStore, user_data: Path, state: _ThreadState) -> None:
        self._store = store
        self._user_data = user_data
        self._state = state
        base = user_data.parent / "evidence"
        self.objects = ObjectStore(base / "objects")
        self._runs = base / "runs"

    def snapshot(self) -> RunSnapshot:
        """Snapshot every root now."""
        with self._state.lock:
            return RunSnapshot(
                trees={
                    root: snapshot_dir(
                        str(self._user_data / root),
                        self.objects,
                        self._state.caches.setdefault(root, StatCache()),
                        self._store.excluded(root),
                        self._store.max_file_bytes,
                        watcher=self._store.watcher,
                        watch=self._watch(root),
                    )
                    for root in ROOTS
                }
            )

    def _watch(self, root: str) -> RootWatch:
        watch = self._state.watches.get(root)
        if watch is None:
            watch = self._state.watches[root] = RootWatch(str(self._user_data / root))
        return watch

    def record(self, run_id: str, snapshot: RunSnapshot) -> None:
        """Keep ``snapshot`` as the state before ``run_id`` (what a rollback restores)."""
        self._runs.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"run_id": run_id, "at": time.time(), "before": snapshot.trees})
        temp = self._runs / f".{run_id}.tmp"
        temp.write_text(data)
        os.replace(temp, self._runs / f"{run_id}.json")

    def before(self, run_id: str) -> RunSnapshot:
        try:
            data = json.loads((self._runs / f"{run_id}.json").read_text())
        except FileNotFoundError as exc:
            raise SnapshotMissing(f"no snapshot was recorded before run {run_id}") from exc
        return RunSnapshot(trees={str(k): str(v) for k, v in data["before"].items()})

    def changes(self, before: RunSnapshot, after: RunSnapshot) -> Changes:
        """Added, modified and deleted files of every root, with diffs."""
        budget = new_budget(self._store.limits)
        result = Changes()
        for root, prefix in ROOTS.items():
            deltas = tree_delta(self.objects, before.trees.get(root), after.trees.get(root))
            part = describe(self.objects, deltas, prefix, self._store.limits, budget)
            result.added.extend(part.added)
            result.modified.extend(part.modified)
            result.deleted.extend(part.deleted)
        return result

    def restore(self, snapshot: RunSnapshot) -> int:
        """Make every root equal to ``snapshot``; how many entries were written or removed."""
        with self._state.lock:
            return sum(
                restore_dir(
                    str(self._user_data / root),
                    tree,
                    self.objects,
                    self._state.caches.setdefault(root, StatCache()),
                    self._store.excluded(root),
                )
                for root, tree in snapshot.trees.items()
            )

    def prune(self) -> int:
        """Forget the snapshots of all but the latest ``keep_runs`` runs, and the objects
        nothing kept refers to (the stat caches' included); how many objects went.

        Runs only once the records exceed twice the limit, so its cost is spread over many
        runs."""
        keep = self._store.keep_runs
        try:
            records = sorted(self._runs.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        except FileNotFoundError:
            return 0
        if len(records) <= 2 * keep:
            return 0
        with self._state.lock:
            for old in records[:-keep]:
                old.unlink(missing_ok=True)
            live = self._reachable(records[-keep:])
            removed = 0
            for name in list(self.objects.names()):
                if name not in live:
                    self.objects.remove(name)
                    removed += 1
            return removed

    def _reachable(self, records: list[Path]) -> set[str]:
        live: set[str] = set()
        pending: list[str] = []
        for record in records:
            try:
                pending.extend(json.loads(record.read_text())["before"].values())
            except (FileNotFoundError, ValueError, KeyError):
                continue
        for cache in self._state.caches.values():
            live.update(digest for _key, digest in cache.files.values())
            pending.extend(tree for _entries, tree in cache.dirs.values())
        while pending:
            tree = pending.pop()
            if tree in live:
                continue
            live.add(tree)
            for _name, kind, _mode, ref, _size in self.objects.tree(tree):
                if kind == "f":
                    live.add(ref)  # an UNSTORED ref names no object: harmless here
                elif kind == "d":
                    pending.append(ref)
        return live
