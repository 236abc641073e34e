"""Snapshot cost per run on a large, mostly unchanged workspace, and restore cost.

A thread's ``workspace/`` holds ``--files`` files (100 per directory) and ``outputs/`` one
report. Each "run" takes the snapshot before (what a run pays when it starts executing),
changes ``--changed`` files (an edit, a deletion, a creation, ...), then takes the snapshot
after and computes the changes (what finalization pays). Reported per run: before, after +
changes, and their sum, p50/p95 over ``--runs`` runs once the stat cache is warm; the
floor (a bare walk doing one ``lstat`` per entry and nothing else: a run needs two); the
first (cold) snapshot; a rollback restore of one run; and, for scale, a plain copy of the
workspace (``shutil.copytree``) measured in the same run. On a shared machine wall time
mostly measures waiting for a CPU, so the CPU time of the same work (``process_time``) is
reported beside it, and the CPU time of GNU ``find`` stat-ing the same tree (the floor of
any stat-based snapshot, in C). The store lists only the directories inotify reported
changed (``evidence.watch``); a second store with watching off (it stats every file) takes
the same after-snapshot each run, for the ratio, and the two trees are compared. Nothing
here asserts.

    .venv/bin/python bench/evidence_bench.py --files 10000 --changed 3 --runs 30
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fawn.evidence import ChangeLimits, EvidenceStore


def build(root: Path, files: int) -> None:
    ws = root / "workspace"
    for i in range(files):
        d = ws / f"pkg{i // 100:03}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i % 100:03}.py").write_text(f"# module {i}\nVALUE = {i}\n" * 20)
    (root / "outputs").mkdir(parents=True, exist_ok=True)
    (root / "outputs" / "report.md").write_text("# Report\n")


def change(root: Path, run: int, count: int) -> None:
    ws = root / "workspace"
    for k in range(count):
        kind = k % 3
        if kind == 0:  # edit
            (ws / f"pkg{k:03}" / "f000.py").write_text(f"# edited by run {run}\n")
        elif kind == 1:  # delete (and recreate the one deleted last run)
            target = ws / f"pkg{k:03}" / f"f{run % 100:03}.py"
            target.unlink(missing_ok=True)
        else:  # create
            (ws / f"pkg{k:03}" / f"new_{run}.py").write_text(f"NEW = {run}\n")


def bare_walk(root: Path) -> int:
    """The floor of any stat-based snapshot: one ``lstat`` per entry, nothing else."""
    count = 0
    stack = [str(root / "workspace"), str(root / "outputs")]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                entry.stat(follow_symlinks=False)
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return count


def find_walk(root: Path) -> float:
    """CPU seconds (user + system) of GNU find stat-ing every entry: the floor in C."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        ["find", str(root / "workspace"), str(root / "outputs"), "-newer", str(root)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--changed", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "threads" / "t" / "user-data"
        build(root, args.files)
        store = EvidenceStore(
            exclude=[".git", "node_modules"], keep_runs=20, limits=ChangeLimits()
        ).thread(root)
        # the same snapshots by a store told nothing by inotify: it stats every file
        walking = EvidenceStore(
            exclude=[".git", "node_modules"], keep_runs=20, limits=ChangeLimits(), watch=False
        ).thread(root)

        t0 = time.perf_counter()
        store.snapshot()
        cold = time.perf_counter() - t0
        walking.snapshot()

        walks: list[float] = []
        cpus: list[float] = []
        walk_cpus: list[float] = []
        befores: list[float] = []
        afters: list[float] = []
        walked: list[float] = []
        same = True
        seen = 0
        first_before = None
        for run in range(args.runs):
            c0 = time.process_time()
            t0 = time.perf_counter()
            before = store.snapshot()
            store.record(f"run-{run}", before)
            t1 = time.perf_counter()
            c1 = time.process_time()
            change(root, run, args.changed)
            t2 = time.perf_counter()
            c2 = time.process_time()
            changes = store.changes(before, store.snapshot())
            t3 = time.perf_counter()
            cpus.append((c1 - c0) + (time.process_time() - c2))
            befores.append(t1 - t0)
            t5 = time.perf_counter()
            same = same and walking.snapshot().trees == store.snapshot().trees
            walked.append(time.perf_counter() - t5)  # its before is this run's after
            t4, c4 = time.perf_counter(), time.process_time()
            bare_walk(root)
            walks.append(time.perf_counter() - t4)
            walk_cpus.append(time.process_time() - c4)
            afters.append(t3 - t2)
            seen = len(changes.added) + len(changes.modified) + len(changes.deleted)
            if first_before is None:
                first_before = before

        # restore the last run (its pre-run snapshot), byte for byte
        t0 = time.perf_counter()
        touched = store.restore(store.before(f"run-{args.runs - 1}"))
        restore = time.perf_counter() - t0

        find_cpu = find_walk(root)
        t0 = time.perf_counter()
        shutil.copytree(root / "workspace", Path(tmp) / "copy")
        copy = time.perf_counter() - t0
        objects = root.parent / "evidence" / "objects"
        stored = sum(p.stat().st_size for p in objects.rglob("*") if p.is_file())

    totals = [b + a for b, a in zip(befores, afters, strict=True)]
    ms = 1000.0
    result: dict[str, Any] = {
        "files": args.files,
        "changed_per_run": args.changed,
        "runs": args.runs,
        "changes_seen_last_run": seen,
        "cold_first_snapshot_ms": round(cold * ms, 1),
        "before_p50_ms": round(statistics.median(befores) * ms, 2),
        "after_and_changes_p50_ms": round(statistics.median(afters) * ms, 2),
        "per_run_p50_ms": round(statistics.median(totals) * ms, 2),
        "per_run_p95_ms": round(pct(totals, 0.95) * ms, 2),
        "per_run_cpu_p50_ms": round(statistics.median(cpus) * ms, 2),
        "walking_store_per_run_p50_ms": round(2 * statistics.median(walked) * ms, 2),
        "per_run_vs_walking_store": round(
            statistics.median(totals) / (2 * statistics.median(walked)), 3
        ),
        "watched_trees_equal_walked_every_run": same,
        "bare_lstat_walk_p50_ms": round(statistics.median(walks) * ms, 2),
        "bare_lstat_walk_cpu_p50_ms": round(statistics.median(walk_cpus) * ms, 2),
        "find_cpu_ms": round(find_cpu * ms, 2),
        "per_run_vs_two_bare_walks": round(
            statistics.median(totals) / (2 * statistics.median(walks)), 2
        ),
        "restore_one_run_ms": round(restore * ms, 1),
        "restore_entries_touched": touched,
        "copytree_ms": round(copy * ms, 1),
        "per_run_vs_copytree": round(statistics.median(totals) / copy, 3),
        "object_store_bytes": stored,
    }
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "evidence_bench.json").write_text(json.dumps(result, indent=2))
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
