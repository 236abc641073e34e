"""DeerFlow's ``POST /api/threads/{id}/branches``: a new thread from one assistant turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.runs.runs_helpers import ANY_ISO, ANY_STR, ANY_UUID, TITLE, script, user
from tests.support.live import LiveServer
from tests.support.problems import problem

GONE = "This turn can no longer be branched from."


def outputs(server: LiveServer, tid: str) -> Path:
    return server.data_dir / "threads" / tid / "user-data" / "outputs"


async def _two_turns(http: httpx.AsyncClient, key: str) -> tuple[str, list[dict[str, Any]]]:
    tid = (await http.post("/threads", json={})).json()["thread_id"]
    for text in (key, "again"):
        done = await http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user(text)}
        )
        assert done.status_code == 200, done.text
    state = (await http.get(f"/threads/{tid}/state")).json()
    return tid, state["values"]["messages"]


def _contents(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["content"]) for m in state["values"]["messages"]]


async def test_a_branch_from_an_older_turn_holds_that_turn_and_goes_on_from_it(
    server: LiveServer, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "one"}, {"content": "two"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid, messages = await _two_turns(http, key)
        outputs(server, tid).mkdir(parents=True, exist_ok=True)
        (outputs(server, tid) / "later.md").write_text("made by the second turn")
        first_answer = messages[1]["id"]
        made = await http.post(
            f"/api/threads/{tid}/branches",
            json={"message_id": first_answer, "message_ids": [first_answer]},
        )
        assert made.status_code == 200, made.text
        branch = made.json()
        bid = branch["thread_id"]
        state = (await http.get(f"/threads/{bid}/state")).json()
        record = (await http.get(f"/threads/{bid}")).json()
        source_state = (await http.get(f"/threads/{tid}/state")).json()
        parent_at = f"/threads/{tid}/state/{branch['parent_checkpoint_id']}"
        parent = (await http.get(parent_at)).json()
        went_on = await http.post(
            f"/threads/{bid}/runs/wait", json={"assistant_id": "lead_agent", "input": user("other")}
        )
        assert went_on.status_code == 200, went_on.text
        after = (await http.get(f"/threads/{bid}/state")).json()
        source_after = (await http.get(f"/threads/{tid}/state")).json()
    assert branch == {
        "thread_id": ANY_UUID,
        "parent_thread_id": tid,
        "parent_checkpoint_id": ANY_STR,
        "branched_from_message_id": first_answer,
        "workspace_clone_mode": "skipped_historical_turn",
        "history_seed_mode": "seeded",
    }
    assert bid != tid
    assert _contents(state) == [("human", key), ("ai", "one")]
    assert [m["id"] for m in state["values"]["messages"]] == [m["id"] for m in messages[:2]]
    assert (state["next"], state["values"]["title"], record["status"]) == ([], TITLE, "idle")
    assert "sandbox" not in state["values"]
    assert {
        k: v for k, v in record["metadata"].items() if k.startswith(("deerflow", "branch"))
    } == {
        "deerflow_branch": True,
        "branch_parent_thread_id": tid,
        "branch_parent_checkpoint_id": branch["parent_checkpoint_id"],
        "branch_parent_message_id": first_answer,
        "branch_created_at": ANY_ISO,
    }
    # the parent checkpoint is the source's state right after the first turn
    assert _contents(parent) == [("human", key), ("ai", "one")]
    # an older turn's branch does not get files later turns made
    assert not (outputs(server, bid) / "later.md").exists()
    # the branch goes on from the first turn (the model is asked its second turn); the
    # source is untouched
    assert _contents(after) == [("human", key), ("ai", "one"), ("human", "other"), ("ai", "two")]
    assert _contents(source_after) == _contents(source_state)
    seen = [r["messages"] for r in stub.requests_for(key) if r.get("tools")][-1]
    assert [m["content"] for m in seen if m["role"] != "system"] == [key, "one", "other"]


async def test_a_branch_from_the_latest_turn_copies_history_and_files(
    server: LiveServer, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "one"}, {"content": "two"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid, messages = await _two_turns(http, key)
        outputs(server, tid).mkdir(parents=True, exist_ok=True)
        (outputs(server, tid) / "report.md").write_text("# report")
        latest = messages[3]["id"]
        made = await http.post(
            f"/api/threads/{tid}/branches",
            json={"message_id": latest, "message_ids": [latest], "title": "A fork"},
        )
        assert made.status_code == 200, made.text
        branch = made.json()
        bid = branch["thread_id"]
        state = (await http.get(f"/threads/{bid}/state")).json()
        record = (await http.get(f"/threads/{bid}")).json()
    assert (branch["workspace_clone_mode"], branch["history_seed_mode"]) == (
        "current_thread_best_effort",
        "seeded",
    )
    assert _contents(state) == [("human", key), ("ai", "one"), ("human", "again"), ("ai", "two")]
    assert (state["next"], state["values"]["title"], record["status"]) == ([], "A fork", "idle")
    assert (outputs(server, bid) / "report.md").read_text() == "# report"
    assert record["metadata"]["branch_parent_thread_id"] == tid


async def test_a_turn_the_thread_does_not_hold_cannot_be_branched(
    server: LiveServer, stub: Any, key: str
) -> None:
    script(stub, key, {"content": "one"}, {"content": "two"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid, messages = await _two_turns(http, key)
        unknown = await http.post(
            f"/api/threads/{tid}/branches", json={"message_id": "nope", "message_ids": []}
        )
        human_turn = await http.post(
            f"/api/threads/{tid}/branches", json={"message_id": messages[2]["id"]}
        )
        missing = await http.post(
            "/api/threads/00000000-0000-0000-0000-000000000000/branches",
            json={"message_id": "x"},
        )
        empty = await http.post(f"/api/threads/{tid}/branches", json={"message_id": ""})
        listed = (await http.post("/threads/search", json={"limit": 1000})).json()
    assert (unknown.status_code, unknown.json()) == (409, problem(GONE, "conflict"))
    assert (human_turn.status_code, human_turn.json()) == (409, problem(GONE, "conflict"))
    assert missing.status_code == 404
    assert empty.status_code == 422
    assert [t for t in listed if t["metadata"].get("branch_parent_thread_id") == tid] == []


async def test_a_branch_of_a_thread_waiting_for_an_answer_waits_too(
    server: LiveServer, stub: Any, key: str
) -> None:
    ask = {
        "name": "ask_clarification",
        "args": {"question": "Which?", "clarification_type": "missing_info"},
    }
    script(stub, key, {"tool_calls": [ask]}, {"content": "answered"})
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        await http.post(
            f"/threads/{tid}/runs/wait", json={"assistant_id": "lead_agent", "input": user(key)}
        )
        asked = (await http.get(f"/threads/{tid}/state")).json()["values"]["messages"][1]["id"]
        titled = await http.post(
            f"/api/threads/{tid}/branches", json={"message_id": asked, "title": "x"}
        )
        made = await http.post(f"/api/threads/{tid}/branches", json={"message_id": asked})
        assert made.status_code == 200, made.text
        bid = made.json()["thread_id"]
        waiting = (await http.get(f"/threads/{bid}")).json()
        resumed = await http.post(
            f"/threads/{bid}/runs/wait",
            json={"assistant_id": "lead_agent", "command": {"resume": "this one"}},
        )
        source = (await http.get(f"/threads/{tid}")).json()
    assert titled.status_code == 409
    assert titled.json() == problem(
        "The thread waits for an answer: branch it without a title, or answer first.", "conflict"
    )
    assert waiting["status"] == "interrupted"
    assert [(m["type"], m["content"]) for m in resumed.json()["messages"][-2:]] == [
        ("human", "this one"),
        ("ai", "answered"),
    ]
    assert source["status"] == "interrupted"  # the source still waits for its own answer
