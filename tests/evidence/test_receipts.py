"""Delivery receipts when things go wrong: the database refuses the receipt (a success is
downgraded), and a run nobody finished (recovery backfills an empty receipt)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from langgraph_sdk import get_client

from tests.evidence.evidence_helpers import OUT, changes, events, present, user, write
from tests.runs.runs_helpers import ANY_ISO, slow_turn, wait_streaming
from tests.support.live import LiveServer

REFUSED = "the delivery receipt could not be recorded: receipts refused"


async def test_a_receipt_the_database_refuses_downgrades_the_success(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server()
    with sqlite3.connect(live.data_dir / "fawn.db") as db:
        db.execute(
            "CREATE TRIGGER refuse_receipts BEFORE INSERT ON run_receipts "
            "BEGIN SELECT RAISE(ABORT, 'receipts refused'); END"
        )
    stub.add_script(
        key,
        [
            {"tool_calls": [write(f"{OUT}/r.md", "R\n")]},
            {"tool_calls": [present(f"{OUT}/r.md")]},
            {"content": "delivered"},
        ],
    )
    client = get_client(url=live.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(tid, "lead_agent", input=user(key))
        joined = await client.runs.join(tid, run["run_id"])
        record = await client.runs.get(tid, run["run_id"])
    finally:
        await client.aclose()

    assert joined == {"__error__": {"error": "DeliveryUnrecorded", "message": REFUSED}}
    assert (record["status"], record["stop_reason"], record["error"]) == (
        "error",
        "delivery_unrecorded",
        REFUSED,
    )
    journal = await events(live, tid, run["run_id"])
    assert [(e["kind"], e["data"].get("status")) for e in journal][-3:] == [
        ("workspace_changes", None),
        ("error", None),
        ("run_finished", "error"),
    ]
    assert journal[-2]["data"] == {"error": "DeliveryUnrecorded", "message": REFUSED}
    assert (await changes(live, tid, run["run_id"])).json()["receipt"] is None


async def test_recovery_backfills_an_empty_receipt_for_an_orphaned_run(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server()
    stub.add_script(key, [slow_turn(40, 0.05)])
    client = get_client(url=live.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            tid, "lead_agent", input=user(key), stream_mode="messages-tuple"
        )
        await wait_streaming(client, tid, run["run_id"])
    finally:
        await client.aclose()

    live.kill()
    live.start()

    response = await changes(live, tid, run["run_id"])
    assert response.status_code == 200, response.text
    assert response.json() == {
        "run_id": run["run_id"],
        "thread_id": tid,
        "recorded": False,
        "reason": "no changes were recorded for this run (it never executed, or it did not finish)",
        "added": [],
        "modified": [],
        "deleted": [],
        "receipt": {
            "presented": [],
            "produced": [],
            "matched": [],
            "satisfied": False,
            "recovered": True,
            "created_at": ANY_ISO,
        },
    }


async def test_with_evidence_off_nothing_is_snapshotted_or_checked(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    live = make_server(evidence={"enabled": False})
    stub.add_script(
        key, [{"tool_calls": [write(f"{OUT}/unpresented.md", "U\n")]}, {"content": "done"}]
    )
    client = get_client(url=live.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(tid, "lead_agent", input=user(key))
        joined = await client.runs.join(tid, run["run_id"])
        record = await client.runs.get(tid, run["run_id"])
    finally:
        await client.aclose()

    assert joined["messages"][-1]["content"] == "done"
    assert (record["status"], record["stop_reason"]) == ("success", "completed")
    assert not (live.data_dir / "threads" / tid / "evidence").exists()
    response = await changes(live, tid, run["run_id"])
    assert response.json()["recorded"] is False
    assert response.json()["receipt"] is None
    assert "workspace_changes" not in [e["kind"] for e in await events(live, tid, run["run_id"])]


async def test_a_failed_snapshot_is_journalled_and_the_run_goes_on(
    sqlite_server: LiveServer, stub: Any, key: str
) -> None:
    stub.add_script(key, [{"content": "still answered"}])
    client = get_client(url=sqlite_server.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        thread_dir = sqlite_server.data_dir / "threads" / tid
        thread_dir.mkdir(parents=True, exist_ok=True)
        (thread_dir / "evidence").write_text("not a directory")  # where snapshots go
        run = await client.runs.create(tid, "lead_agent", input=user(key))
        joined = await client.runs.join(tid, run["run_id"])
    finally:
        await client.aclose()

    assert joined["messages"][-1]["content"] == "still answered"
    journal = await events(sqlite_server, tid, run["run_id"])
    (entry,) = [e["data"] for e in journal if e["kind"] == "workspace_changes"]
    assert entry == {"recorded": False, "reason": "the workspace snapshot failed: Not a directory"}
    body = (await changes(sqlite_server, tid, run["run_id"])).json()
    assert (body["recorded"], body["reason"], body["receipt"]) == (
        False,
        "the workspace snapshot failed: Not a directory",
        None,
    )
