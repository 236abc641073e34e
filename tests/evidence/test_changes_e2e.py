"""Workspace changes and delivery receipts through the public surface: a live server, the
real lead agent and tools, a scripted model doing file work."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from tests.evidence.evidence_helpers import (
    OUT,
    WS,
    bash,
    changes,
    edit,
    events,
    present,
    read,
    user,
    user_data,
    write,
)
from tests.runs.runs_helpers import ANY_INT, ANY_ISO
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.problems import problem

pytestmark = pytest.mark.bwrap


async def _run(client: LangGraphClient, tid: str, prompt: str) -> tuple[str, Any]:
    run = await client.runs.create(tid, "lead_agent", input=user(prompt))
    joined = await client.runs.join(tid, run["run_id"])
    return str(run["run_id"]), joined


async def test_the_changes_route_shows_the_lead_agents_file_work(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    tid = (await client.threads.create())["thread_id"]
    root = user_data(server, tid)
    (root / "workspace" / "notes.txt").write_text("alpha\nbeta\n")
    (root / "workspace" / "old.txt").write_text("to go\n")
    (root / "workspace" / "logo.bin").write_bytes(b"\x89PNG\0\1")
    (root / "workspace" / "node_modules").mkdir()
    (root / "uploads" / "in.csv").write_text("a,b\n")
    stub.add_script(
        key,
        [
            {"tool_calls": [read(f"{WS}/notes.txt")]},  # read before write
            {
                "tool_calls": [
                    write(f"{WS}/new.py", "print('hi')\n"),
                    edit(f"{WS}/notes.txt", "beta", "gamma"),
                    bash(
                        "rm /mnt/user-data/workspace/old.txt"
                        " && printf 'x' > /mnt/user-data/workspace/node_modules/dep.js"
                        " && printf '\\0\\1\\2' > /mnt/user-data/workspace/logo.bin"
                        " && mkdir -p /mnt/user-data/workspace/.fawn"
                        " && echo cache > /mnt/user-data/workspace/.fawn/out.txt"
                        " && echo more > /mnt/user-data/uploads/more.csv"
                    ),
                    write(f"{OUT}/report.md", "# Report\n"),
                ]
            },
            {"tool_calls": [present(f"{OUT}/report.md")]},
            {"content": "done"},
        ],
    )

    rid, joined = await _run(client, tid, key)

    assert "__error__" not in joined
    response = await changes(server, tid, rid)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "run_id": rid,
        "thread_id": tid,
        "recorded": True,
        "reason": None,
        "added": [
            {
                "path": f"{WS}/new.py",
                "type": "file",
                "size_before": None,
                "size_after": 12,
                "diff": f"--- /dev/null\n+++ {WS}/new.py\n@@ -0,0 +1 @@\n+print('hi')\n",
            },
            {
                "path": f"{OUT}/report.md",
                "type": "file",
                "size_before": None,
                "size_after": 9,
                "diff": f"--- /dev/null\n+++ {OUT}/report.md\n@@ -0,0 +1 @@\n+# Report\n",
            },
        ],
        "modified": [
            {
                "path": f"{WS}/logo.bin",
                "type": "file",
                "size_before": 6,
                "size_after": 3,
                "diff": None,
                "diff_omitted": "binary",
            },
            {
                "path": f"{WS}/notes.txt",
                "type": "file",
                "size_before": 11,
                "size_after": 12,
                "diff": f"--- {WS}/notes.txt\n+++ {WS}/notes.txt\n@@ -1,2 +1,2 @@\n"
                " alpha\n-beta\n+gamma\n",
            },
        ],
        "deleted": [
            {
                "path": f"{WS}/old.txt",
                "type": "file",
                "size_before": 6,
                "size_after": None,
                "diff": f"--- {WS}/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-to go\n",
            }
        ],
        "receipt": {
            "presented": [f"{OUT}/report.md"],
            "produced": [f"{OUT}/report.md"],
            "matched": [f"{OUT}/report.md"],
            "satisfied": True,
            "recovered": False,
            "created_at": ANY_ISO,
        },
    }
    journal = await events(server, tid, rid)
    (entry,) = [e for e in journal if e["kind"] == "workspace_changes"]
    body = response.json()
    assert entry["data"] == {
        "recorded": True,
        "added": body["added"],
        "modified": body["modified"],
        "deleted": body["deleted"],
    }
    assert [e["kind"] for e in journal][-2:] == ["workspace_changes", "run_finished"]
    await _check_deerflow_shape(server, tid, rid, body)


def _deerflow_file(change: dict[str, Any], status: str, root: str, **rest: Any) -> dict[str, Any]:
    return {
        "path": change["path"],
        "root": root,
        "status": status,
        "binary": False,
        "sensitive": False,
        "size_before": change["size_before"],
        "size_after": change["size_after"],
        "sha256_before": None,
        "sha256_after": None,
        "diff": change["diff"] or "",
        "diff_truncated": False,
        "diff_unavailable_reason": None,
        "symlink": False,
        "symlink_target_before": None,
        "symlink_target_after": None,
        **rest,
    }


async def _check_deerflow_shape(
    server: LiveServer, tid: str, rid: str, body: dict[str, Any]
) -> None:
    """DeerFlow's web app reads the same changes from ``…/workspace-changes``."""
    (new_py, report), (logo, notes), (old,) = body["added"], body["modified"], body["deleted"]
    files = [
        _deerflow_file(new_py, "created", "workspace", additions=1, deletions=0),
        _deerflow_file(report, "created", "outputs", additions=1, deletions=0),
        _deerflow_file(
            logo,
            "modified",
            "workspace",
            binary=True,
            diff_unavailable_reason="binary",
            additions=0,
            deletions=0,
        ),
        _deerflow_file(notes, "modified", "workspace", additions=1, deletions=1),
        _deerflow_file(old, "deleted", "workspace", additions=0, deletions=1),
    ]
    summary = {
        "created": 2,
        "modified": 2,
        "deleted": 1,
        "symlink_created": 0,
        "additions": 3,
        "deletions": 2,
        "truncated": False,
    }
    url = f"/api/threads/{tid}/runs/{rid}/workspace-changes"
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        full = await http.get(url)
        no_diff = await http.get(url, params={"include_diff": "false"})
        no_files = await http.get(url, params={"include_files": "false"})
    expected = {"available": True, "version": 1, "summary": summary, "limits": {}}
    assert (full.status_code, full.json()) == (200, {**expected, "files": files})
    assert no_diff.json() == {**expected, "files": [{**f, "diff": ""} for f in files]}
    assert no_files.json() == {**expected, "files": []}


async def test_an_unpresented_output_ends_delivery_incomplete_naming_it(
    server: LiveServer, client: LangGraphClient, stub: StubServerThread, key: str
) -> None:
    tid = (await client.threads.create())["thread_id"]
    root = user_data(server, tid)
    (root / "outputs" / "old.md").write_text("from before\n")
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    write(f"{OUT}/a.md", "A\n"),
                    write(f"{OUT}/b.md", "B\n"),
                    write(f"{WS}/scratch.txt", "not a deliverable\n"),
                ]
            },
            # a pre-existing file presented without being produced does not count
            {"tool_calls": [present(f"{OUT}/a.md", f"{OUT}/old.md")]},
            {"content": "done"},
        ],
    )

    rid, joined = await _run(client, tid, key)

    message = (
        "the run wrote files to /mnt/user-data/outputs without presenting them with "
        f"present_files: {OUT}/b.md"
    )
    assert joined == {"__error__": {"error": "DeliveryIncomplete", "message": message}}
    run = await client.runs.get(tid, rid)
    assert (run["status"], run["stop_reason"], run["error"]) == (
        "error",
        "delivery_incomplete",
        message,
    )
    journal = await events(server, tid, rid)
    assert [(e["kind"], e["data"]) for e in journal if e["kind"] in ("error", "run_finished")] == [
        ("error", {"error": "DeliveryIncomplete", "message": message}),
        (
            "run_finished",
            {
                "status": "error",
                "stop_reason": "delivery_incomplete",
                "duration_ms": ANY_INT,
                "usage": {
                    "prompt_tokens": ANY_INT,
                    "completion_tokens": ANY_INT,
                    "total_tokens": ANY_INT,
                },
            },
        ),
    ]
    receipt = (await changes(server, tid, rid)).json()["receipt"]
    assert receipt == {
        "presented": [f"{OUT}/a.md", f"{OUT}/old.md"],
        "produced": [f"{OUT}/a.md", f"{OUT}/b.md"],
        "matched": [f"{OUT}/a.md"],
        "satisfied": False,
        "recovered": False,
        "created_at": ANY_ISO,
    }
    thread = await client.threads.get(tid)
    assert (thread["status"], thread["error"]) == (
        "error",
        {"error": "DeliveryIncomplete", "message": message},
    )


async def test_a_run_without_file_work_records_empty_changes_and_a_satisfied_receipt(
    sqlite_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    from langgraph_sdk import get_client

    client = get_client(url=sqlite_server.url, timeout=60)
    try:
        stub.add_script(key, [{"content": "just talk"}])
        tid = (await client.threads.create())["thread_id"]
        rid, joined = await _run(client, tid, key)
    finally:
        await client.aclose()
    assert joined["messages"][-1]["content"] == "just talk"
    response = await changes(sqlite_server, tid, rid)
    assert response.json() == {
        "run_id": rid,
        "thread_id": tid,
        "recorded": True,
        "reason": None,
        "added": [],
        "modified": [],
        "deleted": [],
        "receipt": {
            "presented": [],
            "produced": [],
            "matched": [],
            "satisfied": True,
            "recovered": False,
            "created_at": ANY_ISO,
        },
    }


async def test_changes_of_unknown_or_unfinished_runs(
    sqlite_server: LiveServer, stub: StubServerThread, key: str
) -> None:
    from langgraph_sdk import get_client

    from tests.runs.runs_helpers import slow_turn, wait_streaming

    client = get_client(url=sqlite_server.url, timeout=60)
    try:
        stub.add_script(key, [slow_turn(40, 0.05)])
        tid = (await client.threads.create())["thread_id"]
        missing = "00000000-0000-0000-0000-000000000000"
        unknown = await changes(sqlite_server, tid, missing)
        assert (unknown.status_code, unknown.json()) == (
            404,
            problem(f"run {missing} not found in thread {tid}", "not_found"),
        )
        run = await client.runs.create(
            tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
        )
        await wait_streaming(client, tid, run["run_id"])
        busy = await changes(sqlite_server, tid, run["run_id"])
        assert (busy.status_code, busy.json()) == (
            409,
            problem(
                f"run {run['run_id']} is running: its changes are recorded when it ends",
                "conflict",
                retryable=True,
            ),
        )
        await client.runs.join(tid, run["run_id"])
        other = await changes(sqlite_server, "no-such-thread", run["run_id"])
        assert (other.status_code, other.json()) == (
            404,
            problem("thread no-such-thread not found", "not_found"),
        )
    finally:
        await client.aclose()
