"""ThreadState's reducers: properties (hypothesis) and their behaviour inside a real graph."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from fawn.agent.state import (
    MAX_DELEGATIONS,
    MAX_READ_FILES,
    SERVER_CHANNELS,
    STATE_CHANNELS,
    DelegationEntry,
    InvalidStateUpdate,
    SandboxConflictError,
    ThreadState,
    merge_artifacts,
    merge_delegations,
    merge_read_files,
    merge_sandbox,
    merge_todos,
    merge_viewed_images,
    validate_update,
)

paths = st.lists(st.sampled_from([f"/mnt/user-data/outputs/{n}" for n in "abcdef"]), max_size=8)
maybe_paths = st.none() | paths


def unique_in_order(items: list[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


# -- artifacts ------------------------------------------------------------------------------


@given(existing=maybe_paths, new=maybe_paths)
def test_merge_artifacts_is_an_order_preserving_deduplicating_union(
    existing: list[str] | None, new: list[str] | None
) -> None:
    merged = merge_artifacts(existing, new)
    assert merged == unique_in_order([*(existing or []), *(new or [])])
    assert len(set(merged)) == len(merged)
    # What was there keeps its place in front; new paths follow in their own order.
    assert merged[: len(unique_in_order(existing or []))] == unique_in_order(existing or [])


@given(existing=maybe_paths)
def test_merge_artifacts_none_keeps(existing: list[str] | None) -> None:
    assert merge_artifacts(existing, None) == unique_in_order(existing or [])
    assert merge_artifacts(existing, []) == unique_in_order(existing or [])


@given(a=paths, b=paths, c=paths)
def test_merge_artifacts_is_associative_and_idempotent(
    a: list[str], b: list[str], c: list[str]
) -> None:
    assert merge_artifacts(merge_artifacts(a, b), c) == merge_artifacts(a, merge_artifacts(b, c))
    once = merge_artifacts(a, b)
    assert merge_artifacts(once, b) == once  # replaying a turn adds nothing
    assert merge_artifacts(once, once) == once


@given(a=paths, b=paths)
def test_merge_artifacts_does_not_mutate_its_inputs(a: list[str], b: list[str]) -> None:
    a_before, b_before = list(a), list(b)
    merge_artifacts(a, b)
    assert (a, b) == (a_before, b_before)


# -- sandbox --------------------------------------------------------------------------------

sandbox_ids = st.sampled_from(["local:t1", "local:t2", "docker:abc"])
sandboxes = st.none() | st.builds(lambda i: {"sandbox_id": i}, st.none() | sandbox_ids)


@given(existing=sandboxes, new=sandboxes)
def test_merge_sandbox_binds_once(existing: Any, new: Any) -> None:
    old_id = (existing or {}).get("sandbox_id")
    new_id = (new or {}).get("sandbox_id")
    if old_id is not None and new_id is not None and old_id != new_id:
        with pytest.raises(SandboxConflictError) as raised:
            merge_sandbox(existing, new)
        assert str(raised.value) == (
            f"thread is bound to sandbox {old_id!r}, refusing to rebind it to {new_id!r}"
        )
        return
    merged = merge_sandbox(existing, new)
    if new is None:
        assert merged == existing
    elif old_id is None:
        assert merged == new  # first binding
    else:
        assert merged == existing  # the same id again (or no id) is a no-op


@given(sandbox_id=sandbox_ids)
def test_merge_sandbox_same_id_is_a_no_op(sandbox_id: str) -> None:
    bound = {"sandbox_id": sandbox_id}
    assert merge_sandbox(bound, {"sandbox_id": sandbox_id}) is bound
    assert merge_sandbox(merge_sandbox(None, bound), bound) == bound


def test_sandbox_conflict_error_is_a_value_error() -> None:
    assert issubclass(SandboxConflictError, ValueError)


# -- todos ----------------------------------------------------------------------------------

todos = st.lists(
    st.fixed_dictionaries(
        {"content": st.text(max_size=5), "status": st.sampled_from(["pending", "completed"])}
    ),
    max_size=4,
)


@given(existing=st.none() | todos, new=st.none() | todos)
def test_merge_todos_none_keeps_empty_clears_list_replaces(existing: Any, new: Any) -> None:
    merged = merge_todos(existing, new)
    if new is None:
        assert merged is existing
    else:
        assert merged == new
        assert merged is not new  # a copy: the writer's list stays its own
    assert merge_todos(existing, []) == []


# -- viewed_images --------------------------------------------------------------------------

images = st.dictionaries(
    st.sampled_from(["/a.png", "/b.png", "/c.jpg"]),
    st.fixed_dictionaries(
        {"mime_type": st.sampled_from(["image/png", "image/jpeg"])},
        optional={"size": st.integers(0, 10_000)},
    ),
    max_size=3,
)


@given(existing=st.none() | images, new=st.none() | images)
def test_merge_viewed_images(existing: Any, new: Any) -> None:
    merged = merge_viewed_images(existing, new)
    if new is None:
        assert merged == (existing or {})
    elif new == {}:
        assert merged == {}  # {} clears
    else:
        assert merged == {**(existing or {}), **new}  # merge by path, new wins
        assert set(merged) == set(existing or {}) | set(new)


@given(a=images, b=images, c=images)
def test_merge_viewed_images_is_associative_without_clears(a: Any, b: Any, c: Any) -> None:
    if {} in (b, c):
        return
    left = merge_viewed_images(merge_viewed_images(a, b), c)
    right = merge_viewed_images(a, merge_viewed_images(b, c))
    assert left == right


# -- delegations ----------------------------------------------------------------------------

STATUSES = ["in_progress", "completed", "failed", "cancelled", "timed_out", "polling_timed_out"]
TERMINAL = set(STATUSES) - {"in_progress"}


def delegation_entry(task: str, status: str, at: str, brief: str = "") -> DelegationEntry:
    entry: DelegationEntry = {
        "id": task,
        "run_id": "r1",
        "description": f"do {task}",
        "subagent_type": "bash",
        "status": status,  # type: ignore[typeddict-item]
        "created_at": at,
    }
    if brief:
        entry["result_brief"] = brief
    return entry


entries = st.builds(
    delegation_entry,
    task=st.sampled_from(["t1", "t2", "t3", "t4"]),
    status=st.sampled_from(STATUSES),
    at=st.sampled_from(["2026-01-01T00:00:00", "2026-01-02T00:00:00"]),
    brief=st.sampled_from(["", "r"]),
)
batches = st.lists(entries, max_size=6)


def fold(updates: list[list[DelegationEntry]]) -> list[DelegationEntry]:
    ledger: list[DelegationEntry] = []
    for update in updates:
        ledger = merge_delegations(ledger, update)
    return ledger


@given(updates=st.lists(batches, max_size=6))
def test_delegations_keep_one_entry_per_task_in_first_seen_order(
    updates: list[list[DelegationEntry]],
) -> None:
    ledger = fold(updates)
    ids = [e["id"] for e in ledger]
    assert ids == unique_in_order([e["id"] for batch in updates for e in batch])
    for entry in ledger:
        first = next(e for b in updates for e in b if e["id"] == entry["id"])
        assert entry["created_at"] == first["created_at"]


@given(updates=st.lists(batches, max_size=6))
def test_a_terminal_status_is_never_overwritten_by_a_stale_in_progress_update(
    updates: list[list[DelegationEntry]],
) -> None:
    ledger = fold(updates)
    for entry in ledger:
        writes = [e for b in updates for e in b if e["id"] == entry["id"]]
        terminal = [e for e in writes if e["status"] in TERMINAL]
        if terminal:
            # the latest terminal version wins, whatever in-progress writes came after it
            assert entry["status"] == terminal[-1]["status"]
            assert entry.get("result_brief") == terminal[-1].get("result_brief")
        else:
            assert entry["status"] == "in_progress"


@given(existing=batches)
def test_an_empty_or_missing_delegation_update_keeps_the_ledger(
    existing: list[DelegationEntry],
) -> None:
    ledger = merge_delegations(None, existing)
    assert merge_delegations(ledger, None) == ledger
    assert merge_delegations(ledger, []) == ledger
    assert merge_delegations(ledger, ledger) == ledger


@given(a=batches, b=batches, c=batches)
def test_merging_delegations_in_one_step_or_several_agrees(
    a: list[DelegationEntry], b: list[DelegationEntry], c: list[DelegationEntry]
) -> None:
    assert merge_delegations(merge_delegations(a, b), c) == merge_delegations(a, [*b, *c])


def test_the_delegation_ledger_is_bounded_and_drops_the_oldest() -> None:
    many = [delegation_entry(f"t{n}", "completed", "2026") for n in range(MAX_DELEGATIONS + 5)]
    ledger = merge_delegations(None, many)
    assert [e["id"] for e in ledger] == [f"t{n}" for n in range(5, MAX_DELEGATIONS + 5)]


# -- read_files -----------------------------------------------------------------------------

versions = st.dictionaries(
    st.sampled_from([f"/mnt/user-data/workspace/{n}" for n in "abcd"]),
    st.sampled_from(["d1", "d2", "d3"]),
    max_size=4,
)


@given(updates=st.lists(st.none() | versions, max_size=6))
def test_read_files_keep_the_latest_version_of_each_path(
    updates: list[dict[str, str] | None],
) -> None:
    merged: dict[str, str] = {}
    for update in updates:
        merged = merge_read_files(merged, update)
    expected: dict[str, str] = {}
    for update in updates:
        expected.update(update or {})
    assert merged == expected


def test_read_files_are_bounded_and_drop_the_least_recent() -> None:
    paths = [f"/mnt/user-data/workspace/{n}" for n in range(MAX_READ_FILES + 3)]
    merged = merge_read_files(None, dict.fromkeys(paths, "d"))
    merged = merge_read_files(merged, {paths[3]: "e"})  # touched again: now the newest
    merged = merge_read_files(merged, {"/mnt/user-data/workspace/new": "d"})
    assert len(merged) == MAX_READ_FILES
    assert list(merged)[-2:] == [paths[3], "/mnt/user-data/workspace/new"]
    assert paths[4] not in merged and paths[5] in merged


# -- validate_update ------------------------------------------------------------------------


def test_state_channels() -> None:
    assert {
        "messages",
        "title",
        "artifacts",
        "todos",
        "uploaded_files",
        "viewed_images",
    } == STATE_CHANNELS
    assert {"sandbox", "thread_data", "delegations", "read_files"} == SERVER_CHANNELS
    # Every ThreadState channel but LangChain's agent-loop internals is one or the other.
    internals = {"jump_to", "structured_response"}
    assert set(ThreadState.__annotations__) - internals == STATE_CHANNELS | SERVER_CHANNELS


@pytest.mark.parametrize(
    "update",
    [
        {},
        {"title": "t", "artifacts": ["/a"], "todos": None, "viewed_images": {}},
        {"uploaded_files": [{"filename": "a", "size": 1, "path": "/u/a", "extension": ".txt"}]},
        {"messages": [{"role": "user", "content": "hi"}, ("ai", "hello")]},
        {"messages": "hi"},
    ],
)
def test_validate_update_accepts_well_formed_values(update: dict[str, Any]) -> None:
    validate_update(update)


@pytest.mark.parametrize(
    ("update", "channel", "message"),
    [
        ({"nope": 1}, "nope", "unknown state channel(s): nope; writable channels: artifacts"),
        ({"artifacts": "abc"}, "artifacts", "artifacts: Input should be a valid list"),
        ({"title": 3}, "title", "title: Input should be a valid string"),
        ({"todos": [{"status": "x"}]}, "todos", "todos.0.content: Field required"),
        (
            {"viewed_images": {"/a.png": {"mime_type": "image/png", "base64": "AA=="}}},
            "viewed_images",
            "viewed_images./a.png.base64: Extra inputs are not permitted",
        ),
        ({"uploaded_files": [{"filename": "a"}]}, "uploaded_files", "uploaded_files.0.size"),
        (
            {"sandbox": {"sandbox_id": "local:other-thread"}},
            "sandbox",
            "sandbox: set by the server for the thread; clients cannot write it",
        ),
        (
            {"title": "t", "thread_data": {"workspace_path": "/etc"}, "sandbox": None},
            "sandbox",
            "sandbox, thread_data: set by the server for the thread; clients cannot write it",
        ),
        ({"messages": [None]}, "messages", "messages: Unsupported message type"),
    ],
)
def test_validate_update_names_the_channel(
    update: dict[str, Any], channel: str, message: str
) -> None:
    with pytest.raises(InvalidStateUpdate) as raised:
        validate_update(update)
    assert raised.value.channel == channel
    assert str(raised.value).startswith(message)


# -- inside a real graph --------------------------------------------------------------------


def _graph(writes: dict[str, dict[str, Any]]) -> Any:
    """START → every node in parallel (one step) → END; each node returns its write."""
    builder: StateGraph[ThreadState] = StateGraph(ThreadState)
    for name, update in writes.items():
        builder.add_node(name, lambda state, update=update: update)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=InMemorySaver())


async def test_reducers_apply_to_writes_of_the_same_step() -> None:
    graph = _graph(
        {
            "present_a": {
                "artifacts": ["/o/a", "/o/shared"],
                "viewed_images": {"/a.png": {"mime_type": "image/png"}},
                "sandbox": {"sandbox_id": "local:t"},
            },
            "present_b": {
                "artifacts": ["/o/shared", "/o/b"],
                "viewed_images": {"/b.png": {"mime_type": "image/png"}},
                "sandbox": {"sandbox_id": "local:t"},
            },
        }
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    first = await graph.ainvoke(
        {"messages": [HumanMessage("go", id="h1")], "artifacts": ["/o/old"]}, config
    )
    assert first["artifacts"][0] == "/o/old"
    assert sorted(first["artifacts"]) == ["/o/a", "/o/b", "/o/old", "/o/shared"]
    assert len(first["artifacts"]) == 4  # both writers' "/o/shared" kept once
    assert first["viewed_images"] == {
        "/a.png": {"mime_type": "image/png"},
        "/b.png": {"mime_type": "image/png"},
    }
    assert first["sandbox"] == {"sandbox_id": "local:t"}

    # A second turn: artifacts accumulate, the same sandbox again is a no-op.
    second = await graph.ainvoke({"messages": [HumanMessage("again", id="h2")]}, config)
    assert second["artifacts"] == first["artifacts"]
    assert [m.id for m in second["messages"]] == ["h1", "h2"]


async def test_conflicting_sandboxes_in_one_step_fail_the_step() -> None:
    graph = _graph(
        {
            "bind_1": {"sandbox": {"sandbox_id": "local:1"}},
            "bind_2": {"sandbox": {"sandbox_id": "local:2"}},
        }
    )
    with pytest.raises(SandboxConflictError):
        await graph.ainvoke({"messages": []}, {"configurable": {"thread_id": "t"}})


async def test_todos_and_viewed_images_clear_inside_a_graph() -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    fill = _graph(
        {
            "plan": {"todos": [{"content": "a", "status": "pending"}]},
            "look": {"viewed_images": {"/a.png": {"mime_type": "image/png"}}},
        }
    )
    state = await fill.ainvoke({"messages": []}, config)
    assert state["todos"] == [{"content": "a", "status": "pending"}]
    keep = await fill.aupdate_state(config, {"todos": None, "title": "kept"}, as_node="plan")
    kept = (await fill.aget_state(keep)).values
    assert kept["todos"] == [{"content": "a", "status": "pending"}]
    await fill.aupdate_state(config, {"todos": [], "viewed_images": {}}, as_node="plan")
    cleared = (await fill.aget_state(config)).values
    assert (cleared["todos"], cleared["viewed_images"], cleared["title"]) == ([], {}, "kept")
