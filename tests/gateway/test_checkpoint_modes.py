"""Checkpoint modes (``checkpoints.mode``): a thread keeps the mode it was created in.

A server in the other mode refuses it with 409 on every route that reads or writes its
checkpoints (never a silent misread), and still serves the record itself (read, patch,
delete). What both modes must do alike (state, history, time travel, copy, rollback) runs
over ``mode_server`` in the tests of those features; here: the refusal, and what ``delta``
stores.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.conftest import base_config
from tests.runs.runs_helpers import script, user
from tests.support.live import LiveServer
from tests.support.openai_stub import StubServerThread
from tests.support.pg import create_database, drop_database
from tests.support.problems import problem

OTHER = {"full": "delta", "delta": "full"}


def refusal(thread_id: str, thread_mode: str, server_mode: str) -> dict[str, Any]:
    return problem(
        f"thread {thread_id} was created in checkpoint mode '{thread_mode}' and this server "
        f"runs checkpoints.mode '{server_mode}': it refuses the thread rather than misread "
        f"its checkpoints (serve it from a server in '{thread_mode}' mode)",
        "conflict",
    )


async def thread_with_a_run(server: LiveServer, stub: Any, key: str) -> tuple[str, str]:
    """A thread with one finished run; its id and its latest checkpoint id."""
    script(stub, key, {"content": "answer"})
    client = get_client(url=server.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "lead_agent", input=user(key))
        state = await client.threads.get_state(tid)
    finally:
        await client.aclose()
    return tid, state["checkpoint_id"]


def checkpoint_routes(tid: str, checkpoint_id: str) -> list[tuple[str, str, Any]]:
    """Every route on a thread's checkpoints or runs: method, path, JSON body. Only the
    routes on the thread record itself (read, patch, delete) are not among them."""
    run = {"assistant_id": "lead_agent", "input": user("more")}
    return [
        ("GET", f"/threads/{tid}/state", None),
        ("GET", f"/threads/{tid}/state/{checkpoint_id}", None),
        (
            "POST",
            f"/threads/{tid}/state/checkpoint",
            {"checkpoint": {"checkpoint_id": checkpoint_id}},
        ),
        ("POST", f"/threads/{tid}/state", {"values": {"title": "x"}}),
        ("PATCH", f"/threads/{tid}/state", {"metadata": {"note": "x"}}),
        ("GET", f"/threads/{tid}/history", None),
        ("POST", f"/threads/{tid}/history", {"limit": 5}),
        ("POST", f"/threads/{tid}/copy", None),
        ("POST", f"/threads/{tid}/runs", run),
        ("POST", f"/threads/{tid}/runs/wait", run),
        ("POST", f"/threads/{tid}/runs/stream", run),
        ("POST", f"/threads/{tid}/runs/wait", {**run, "checkpoint_id": checkpoint_id}),
        ("GET", f"/threads/{tid}/runs", None),
        ("POST", "/threads/prune", {"thread_ids": [tid], "strategy": "keep_latest"}),
    ]


async def assert_refused_but_record_served(
    server: LiveServer, tid: str, checkpoint_id: str, thread_mode: str
) -> None:
    server_mode = OTHER[thread_mode]
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        values = (await http.get(f"/threads/{tid}")).json()["values"]
        for method, path, body in checkpoint_routes(tid, checkpoint_id):
            response = await http.request(method, path, json=body)
            assert (method, path, response.status_code) == (method, path, 409)
            assert response.json() == refusal(tid, thread_mode, server_mode)
        # the record is served, and nothing was run or written
        record = await http.get(f"/threads/{tid}")
        assert record.status_code == 200
        assert (record.json()["status"], record.json()["values"]) == ("idle", values)
        patched = await http.patch(f"/threads/{tid}", json={"metadata": {"seen": True}})
        assert (patched.status_code, patched.json()["metadata"]["seen"]) == (200, True)
        assert (await http.delete(f"/threads/{tid}")).status_code == 204
        assert (await http.get(f"/threads/{tid}")).status_code == 404


@pytest.mark.parametrize("thread_mode", ["full", "delta"])
async def test_a_server_in_the_other_mode_refuses_the_thread_with_409_sqlite(
    thread_mode: str, make_server: Callable[..., LiveServer], stub: Any, key: str, tmp_path: Path
) -> None:
    """The same data directory served in one mode, then in the other."""
    data_dir = tmp_path / "data"
    first = make_server(data_dir=data_dir, checkpoints={"mode": thread_mode})
    tid, checkpoint_id = await thread_with_a_run(first, stub, key)
    first.stop()

    second = make_server(data_dir=data_dir, checkpoints={"mode": OTHER[thread_mode]})

    await assert_refused_but_record_served(second, tid, checkpoint_id, thread_mode)


@pytest.fixture
def shared_pg(stub: StubServerThread, tmp_path: Path) -> Iterator[Callable[[str], LiveServer]]:
    """Servers of either mode on one PostgreSQL database, at the same time (a deployment
    whose processes disagree, or one changing its mode)."""
    name, url = create_database()
    started: list[LiveServer] = []

    def make(mode: str) -> LiveServer:
        workdir = tmp_path / f"pg-{mode}"
        config = base_config(
            stub, workdir / "data", database={"url": url}, checkpoints={"mode": mode}
        )
        started.append(LiveServer(config, workdir).start())
        return started[-1]

    try:
        yield make
    finally:
        for live in started:
            live.stop()
        drop_database(name)


async def test_servers_of_both_modes_on_one_postgres_refuse_each_others_threads(
    shared_pg: Callable[[str], LiveServer], stub: Any, key: str
) -> None:
    full, delta = shared_pg("full"), shared_pg("delta")
    full_thread = await thread_with_a_run(full, stub, f"{key}-f")
    delta_thread = await thread_with_a_run(delta, stub, f"{key}-d")

    await assert_refused_but_record_served(delta, *full_thread, "full")
    await assert_refused_but_record_served(full, *delta_thread, "delta")


async def test_delta_checkpoints_hold_no_message_list_and_reads_give_stable_ids(
    make_server: Callable[..., LiveServer], stub: Any, key: str
) -> None:
    """In ``delta`` the checkpoints of a conversation hold no ``messages`` value (their
    steps' writes do), yet every read rebuilds the same list, ids included."""
    server = make_server(checkpoints={"mode": "delta"})
    script(stub, key, *[{"content": f"answer {n}"} for n in range(4)])
    client = get_client(url=server.url, timeout=60)
    try:
        tid = (await client.threads.create())["thread_id"]
        for n in range(4):
            await client.runs.wait(tid, "lead_agent", input=user(f"{key} question {n}"))
        first = await client.threads.get_state(tid)
        second = await client.threads.get_state(tid)
        history = await client.threads.get_history(tid, limit=100)
    finally:
        await client.aclose()

    messages = first["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"] * 4
    assert [m["content"] for m in messages[1::2]] == [f"answer {n}" for n in range(4)]
    assert second["values"]["messages"] == messages
    assert len({m["id"] for m in messages}) == 8
    # every earlier state is a prefix of the latest one, ids and all
    for state in history:
        older = state["values"].get("messages", [])
        assert older == messages[: len(older)]
    with sqlite3.connect(server.data_dir / "checkpoints.db") as db:
        stored = db.execute(
            "SELECT COUNT(*), SUM(INSTR(checkpoint, CAST('answer 3' AS BLOB)) > 0) "
            "FROM checkpoints WHERE thread_id = ?",
            (tid,),
        ).fetchone()
        written = db.execute(
            "SELECT COUNT(*) FROM writes WHERE thread_id = ? AND channel = 'messages' "
            "AND INSTR(value, CAST('answer 3' AS BLOB)) > 0",
            (tid,),
        ).fetchone()
    assert stored[0] == len(history)
    assert stored[1] == 0  # no checkpoint stores the last answer...
    assert written == (1,)  # ...its step's write does, once


async def test_a_copy_keeps_the_order_of_parallel_tool_results(
    mode_client: LangGraphClient, stub: Any, key: str
) -> None:
    """Four tool calls in one answer run as four tasks of one step; a copy's states (in
    ``delta``: rebuilt from the copied writes) list their results in the source's order."""
    calls = [
        {"name": "ls", "args": {"description": f"look {n}", "path": path}}
        for n, path in enumerate(
            ["/mnt/user-data/workspace", "/mnt/user-data/uploads", "/mnt/user-data/outputs"] * 2
        )
    ]
    script(stub, key, {"tool_calls": calls}, {"content": "done"})
    tid = (await mode_client.threads.create())["thread_id"]
    await mode_client.runs.wait(tid, "lead_agent", input=user(key))

    copy = await mode_client.threads.copy(tid)

    source_history = await mode_client.threads.get_history(tid, limit=100)
    copy_history = await mode_client.threads.get_history(copy["thread_id"], limit=100)
    results = [m for m in source_history[0]["values"]["messages"] if m["type"] == "tool"]
    assert [m["tool_call_id"] for m in results] == [
        c["id"] for c in source_history[0]["values"]["messages"][1]["tool_calls"]
    ]
    assert [h["values"] for h in copy_history] == [h["values"] for h in source_history]


async def test_message_updates_read_alike_in_both_modes(
    mode_client: LangGraphClient,
) -> None:
    """Messages written through ``update_state`` (new, without id, replaced by id, removed)
    and a patch of the checkpoint's metadata: every state and the history read the same in
    both modes."""
    client = mode_client
    tid = (
        await client.threads.create(
            supersteps=[
                {
                    "updates": [
                        {"values": {"messages": [user_message("one", "m1")]}, "as_node": "model"}
                    ]
                }
            ]
        )
    )["thread_id"]
    for update in (
        [user_message("two", "m2"), {"role": "assistant", "content": "no id"}],
        [{"role": "assistant", "content": "one, edited", "id": "m1"}],
        [{"type": "remove", "id": "m2", "content": ""}],
        [user_message("three", "m3")],
    ):
        await client.threads.update_state(tid, {"messages": update})
    await client.threads.update_state(tid, {"title": "kept"})
    await client.http.patch(f"/threads/{tid}/state", json={"metadata": {"note": "patched"}})

    state = await client.threads.get_state(tid)
    messages = state["values"]["messages"]
    assert [(m["type"], m["content"]) for m in messages] == [
        ("ai", "one, edited"),
        ("ai", "no id"),
        ("human", "three"),
    ]
    assert (messages[0]["id"], messages[2]["id"]) == ("m1", "m3")
    assert state["values"]["title"] == "kept"
    assert state["metadata"]["note"] == "patched"
    history = await client.threads.get_history(tid, limit=20)
    assert history[0] == state
    contents = [[m["content"] for m in h["values"].get("messages", [])] for h in history]
    assert contents == [
        ["one, edited", "no id", "three"],
        ["one, edited", "no id", "three"],
        ["one, edited", "no id"],
        ["one, edited", "two", "no id"],
        ["one", "two", "no id"],
        ["one"],
    ]
    # the id given to the message written without one is the same in every state
    given = [m["id"] for h in history for m in h["values"].get("messages", [])]
    derived = [i for h, i in zip(contents_flat(history), given, strict=True) if h == "no id"]
    assert len(derived) == 5 and len(set(derived)) == 1


def contents_flat(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for h in history for m in h["values"].get("messages", [])]


def user_message(content: str, message_id: str) -> dict[str, Any]:
    return {"role": "user", "content": content, "id": message_id}
