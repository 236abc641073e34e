"""Rollback restores files: a run's edits, deletions and creations in ``workspace/`` and
``outputs/`` are undone, byte for byte, together with the checkpoint — by
``runs.cancel(action="rollback")`` and by ``multitask_strategy="rollback"``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from tests.evidence.evidence_helpers import (
    OUT,
    WS,
    bash,
    read,
    tree_digest,
    user,
    user_data,
    wait_until,
    write,
)
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread

pytestmark = pytest.mark.bwrap

FILES = 10_000


@pytest.fixture
async def lg(sqlite_server: LiveServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=sqlite_server.url, timeout=120)
    try:
        yield client
    finally:
        await client.aclose()


def big_workspace(root: Path) -> None:
    """10,000 files in 100 directories, a symlink, an executable and an excluded cache."""
    ws = root / "workspace"
    for d in range(100):
        sub = ws / f"pkg{d:02}"
        sub.mkdir(parents=True, exist_ok=True)
        for f in range(FILES // 100):
            (sub / f"f{f:03}.txt").write_text(f"package {d} file {f}\n" * 3)
    (ws / "pkg00" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(ws / "pkg00" / "run.sh", 0o755)
    os.symlink("pkg01/f001.txt", ws / "latest")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "dep.js").write_text("cached\n")
    (root / "outputs" / "kept.md").write_text("# Kept\n")


#: the answer a run is stopped in: the model takes this long before it starts (a run that
#: nobody streams asks for its answer whole, so a streamed turn's pacing would not hold it)
STOP_IN = {"content": "too late", "delay": 60}


def file_work(key: str) -> list[dict[str, object]]:
    """Three changes (an edit, a deletion, a creation), then a long answer to stop in."""
    return [
        {"tool_calls": [read(f"{WS}/pkg07/f007.txt")]},
        {
            "tool_calls": [
                write(f"{WS}/pkg07/f007.txt", "EDITED\n"),
                bash(f"rm {WS}/pkg42/f042.txt && echo stale > {WS}/node_modules/dep.js"),
                write(f"{OUT}/new.md", f"# New {key}\n"),
            ]
        },
        STOP_IN,
    ]


def changed(root: Path) -> bool:
    ws = root / "workspace"
    return (
        (root / "outputs" / "new.md").exists()
        and not (ws / "pkg42" / "f042.txt").exists()
        and "EDITED" in (ws / "pkg07" / "f007.txt").read_text()
    )


async def _start(
    lg: LangGraphClient, server: LiveServer, key: str
) -> tuple[str, str, Path, dict[str, tuple[str, str]]]:
    tid = (await lg.threads.create())["thread_id"]
    root = user_data(server, tid)
    big_workspace(root)
    before = tree_digest(root)
    run = await lg.runs.create(tid, "lead_agent", input=user(key))
    # the thread's first snapshot stores its 10,000 files once: give it time on a busy machine
    await wait_until(lambda: changed(root), "the run's three changes", seconds=240)
    return tid, str(run["run_id"]), root, before


def without_cache(digest: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    return {k: v for k, v in digest.items() if not k.startswith("workspace/node_modules/")}


@pytest.mark.timeout(600)  # writing 10,000 files and their first snapshot, on a busy machine
async def test_cancel_rollback_restores_a_10000_file_workspace_byte_for_byte(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, file_work(key))
    tid, rid, root, before = await _start(lg, sqlite_server, key)

    await lg.runs.cancel(tid, rid, wait=True, action="rollback")

    after = tree_digest(root)
    assert without_cache(after) == without_cache(before)
    assert len([k for k in after if k.endswith(".txt")]) == FILES
    # caches are excluded from snapshots: not restored (README says so)
    assert (root / "workspace" / "node_modules" / "dep.js").read_text() == "stale\n"
    with pytest.raises(NotFoundError):
        await lg.runs.get(tid, rid)
    assert (await lg.threads.get_state(tid))["values"] == {}


@pytest.mark.timeout(600)
async def test_multitask_rollback_restores_files_before_the_next_run_starts(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    stub.add_script(key, file_work(key))
    stub.add_script(f"{key}-next", [{"content": "after the rollback"}])
    tid, rid, root, before = await _start(lg, sqlite_server, key)

    answer = await lg.runs.wait(
        tid, "lead_agent", input=user(f"{key}-next"), multitask_strategy="rollback"
    )

    assert isinstance(answer, dict)
    assert answer["messages"][-1]["content"] == "after the rollback"
    assert without_cache(tree_digest(root)) == without_cache(before)
    with pytest.raises(NotFoundError):
        await lg.runs.get(tid, rid)
    (only,) = await lg.runs.list(tid)
    assert (only["status"], only["multitask_strategy"]) == ("success", "rollback")


async def test_rollback_removes_what_the_run_planted_without_following_links(
    sqlite_server: LiveServer, lg: LangGraphClient, stub: StubServerThread, key: str, tmp_path: Path
) -> None:
    """A run replaces a directory by a symlink to a place outside the thread: the rollback
    removes the link and recreates the directory; the outside place is untouched."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("outside\n")
    tid = (await lg.threads.create())["thread_id"]
    root = user_data(sqlite_server, tid)
    (root / "workspace" / "docs").mkdir()
    (root / "workspace" / "docs" / "a.txt").write_text("inside\n")
    before = tree_digest(root)
    stub.add_script(
        key,
        [
            {"tool_calls": [bash(f"rm -r {WS}/docs && mkdir {WS}/made && echo x > {WS}/made/y")]},
            STOP_IN,
        ],
    )
    run = await lg.runs.create(tid, "lead_agent", input=user(key))
    await wait_until(lambda: (root / "workspace" / "made" / "y").exists(), "the run's work")
    (root / "workspace" / "docs").symlink_to(outside)  # as if the run had planted it

    await lg.runs.cancel(tid, run["run_id"], wait=True, action="rollback")

    assert tree_digest(root) == before
    assert (outside / "a.txt").read_text() == "outside\n"
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt"]
