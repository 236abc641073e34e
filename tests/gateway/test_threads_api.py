"""Every ``client.threads.*`` method of the stock ``langgraph_sdk`` against a live server.

Runs once per backend (the ``server`` fixture is parametrized over SQLite and PostgreSQL).
Responses are compared whole; values the server makes up (ids, timestamps) are matched by
format. Tests share one server per backend, so each isolates itself with unique metadata.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from tests.support.live import LiveServer
from tests.support.problems import problem

# -- matchers ---------------------------------------------------------------------------------


class Match:
    """Equal to any value the predicate accepts; ``repr`` says what it stands for."""

    def __init__(self, predicate: Callable[[Any], bool], description: str) -> None:
        self._predicate = predicate
        self._description = description

    def __eq__(self, other: object) -> bool:
        return bool(self._predicate(other))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return self._description


def _is_uuid(value: object) -> bool:
    try:
        return isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _is_timestamp(value: object) -> bool:
    if not isinstance(value, str) or not value.endswith("+00:00"):
        return False
    try:
        return datetime.fromisoformat(value).utcoffset() == timedelta(0)
    except ValueError:
        return False


def at(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


UUID = Match(_is_uuid, "<uuid>")
TIMESTAMP = Match(_is_timestamp, "<ISO-8601 UTC timestamp>")


def detail(text: str) -> Match:
    """An error body ``{"detail": "...text..."}``."""
    return Match(
        lambda v: (
            isinstance(v, dict)
            and set(v) == {"detail", "code", "retryable"}
            and text in str(v["detail"])
        ),
        f"<{{'detail': ...{text!r}...}}>",
    )


# -- expected shapes --------------------------------------------------------------------------


def thread_shape(thread_id: Any = UUID, **fields: Any) -> dict[str, Any]:
    """The SDK's ``Thread`` as we send it, for a thread no run has touched."""
    return {
        "thread_id": thread_id,
        "created_at": TIMESTAMP,
        "updated_at": TIMESTAMP,
        "state_updated_at": TIMESTAMP,
        "metadata": {},
        "status": "idle",
        "config": {},
        "values": None,
        "interrupts": {},
        "error": None,
        **fields,
    }


def ref(thread_id: str, checkpoint_id: Any) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def channels(**values: Any) -> dict[str, Any]:
    """State values: the reducer channels always exist once a checkpoint does."""
    return {"messages": [], "artifacts": [], "viewed_images": {}, **values}


def pending(node: str) -> dict[str, Any]:
    return {
        "id": UUID,
        "name": node,
        "path": ["__pregel_pull", node],
        "error": None,
        "interrupts": [],
        "checkpoint": None,
        "state": None,
        "result": None,
    }


def state_shape(
    thread_id: str,
    values: dict[str, Any],
    *,
    step: int,
    next_nodes: list[str],
    checkpoint_id: Any = UUID,
    parent_id: Any = None,
    extra_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The SDK's ``ThreadState`` after ``threads.update_state`` calls (no run);
    ``extra_metadata``: what the checkpoint mode adds (``delta``: LangGraph's counters)."""
    return {
        "values": values,
        "next": next_nodes,
        "tasks": [pending(node) for node in next_nodes],
        "metadata": {
            "source": "update",
            "step": step,
            "parents": {},
            "ls_integration": "langchain_create_agent",
            "lc_agent_name": "lead_agent",
            **(extra_metadata or {}),
        },
        "created_at": TIMESTAMP,
        "checkpoint": ref(thread_id, checkpoint_id),
        "parent_checkpoint": ref(thread_id, parent_id) if parent_id else None,
        "interrupts": [],
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": parent_id,
    }


def checkpoint_mode(server: LiveServer) -> str:
    mode: str = server.config.get("checkpoints", {}).get("mode", "full")
    return mode


def delta_counters(server: LiveServer, updates: int, supersteps: int) -> dict[str, Any] | None:
    """The metadata a ``delta``-mode checkpoint adds: LangGraph's count of ``messages``
    updates and supersteps since the last keyframe (none while both are zero)."""
    if checkpoint_mode(server) != "delta" or (updates, supersteps) == (0, 0):
        return None
    return {"counters_since_delta_snapshot": {"messages": [updates, supersteps]}}


def update_response(thread_id: str, checkpoint_id: Any = UUID) -> dict[str, Any]:
    return {
        "checkpoint": ref(thread_id, checkpoint_id),
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        },
        "checkpoint_id": checkpoint_id,
    }


async def entry_node(client: LangGraphClient) -> str:
    """The node an update without ``as_node`` schedules next: the graph's first node."""
    graph = await client.assistants.get_graph("lead_agent")
    return next(e["target"] for e in graph["edges"] if e["source"] == "__start__")


def thread_dir(server: LiveServer, thread_id: str) -> Any:
    return server.data_dir / "threads" / thread_id


# -- the issue's example, verbatim ------------------------------------------------------------


async def test_issue_example(client: LangGraphClient) -> None:
    t = await client.threads.create(metadata={"user_id": "u1", "tags": ["research"]})
    found = await client.threads.search(metadata={"user_id": "u1"}, limit=20, offset=0)
    updated = await client.threads.update_state(
        t["thread_id"],
        {"title": "Research Session", "artifacts": ["/mnt/user-data/outputs/a.md"]},
    )
    history = await client.threads.get_history(t["thread_id"], limit=10)

    tid = t["thread_id"]
    assert t == thread_shape(metadata={"user_id": "u1", "tags": ["research"]})
    assert found[0] == t  # newest first
    assert all(th["metadata"]["user_id"] == "u1" for th in found)
    assert updated == update_response(tid)
    values = channels(title="Research Session", artifacts=["/mnt/user-data/outputs/a.md"])
    assert history == [
        state_shape(
            tid,
            values,
            step=0,
            next_nodes=[await entry_node(client)],
            checkpoint_id=updated["checkpoint_id"],
        )
    ]
    assert await client.threads.get(tid) == thread_shape(
        tid, metadata={"user_id": "u1", "tags": ["research"]}, values=values
    )


# -- create ---------------------------------------------------------------------------------


async def test_create_makes_a_uuid_thread(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    assert thread == thread_shape()
    assert thread["created_at"] == thread["updated_at"] == thread["state_updated_at"]
    assert await client.threads.get(thread["thread_id"]) == thread


@pytest.mark.parametrize(
    "make_id",
    [
        lambda key: str(uuid.uuid4()),
        lambda key: f"{key}_my-thread",
        lambda key: (key + "x" * 64)[:64],
        lambda key: key[-6:],
    ],
    ids=["uuid", "slug", "64-chars", "short"],
)
async def test_create_with_explicit_id(
    client: LangGraphClient, key: str, make_id: Callable[[str], str]
) -> None:
    tid = make_id(key)
    thread = await client.threads.create(thread_id=tid, metadata={"k": key})
    assert thread == thread_shape(tid, metadata={"k": key})
    assert await client.threads.get(tid) == thread


@pytest.mark.parametrize("bad_id", ["a b", "x" * 65, "a/b", "naïve", "a.b", ""])
async def test_create_with_invalid_id_is_422_naming_thread_id(
    server: LiveServer, bad_id: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/threads", json={"thread_id": bad_id})
    assert response.status_code == 422
    assert response.json() == detail("thread_id: thread id must be a UUID or 1-64 characters")


async def test_create_existing_id_is_409_unless_do_nothing(
    client: LangGraphClient, key: str
) -> None:
    tid = f"{key}-dup"
    first = await client.threads.create(thread_id=tid, metadata={"v": 1})
    await client.threads.update_state(tid, {"title": "kept"})
    before = await client.threads.get(tid)

    with pytest.raises(ConflictError) as raised:
        await client.threads.create(thread_id=tid, metadata={"v": 2})
    assert raised.value.response.json() == problem(f"thread {tid} already exists", "conflict")

    again = await client.threads.create(
        thread_id=tid,
        metadata={"v": 3},
        if_exists="do_nothing",
        supersteps=[{"updates": [{"values": {"title": "ignored"}, "as_node": "model"}]}],
    )
    assert again == before
    assert again["metadata"] == first["metadata"] == {"v": 1}
    assert await client.threads.get(tid) == before
    assert len(await client.threads.get_history(tid)) == 1


async def test_create_with_supersteps_applies_each_step(client: LangGraphClient) -> None:
    thread = await client.threads.create(
        metadata={"copied": True},
        supersteps=[
            {"updates": [{"values": {"title": "first", "artifacts": ["a"]}, "as_node": "model"}]},
            {"updates": [{"values": {"artifacts": ["b", "a"]}, "as_node": "model"}]},
        ],
    )
    tid = thread["thread_id"]
    values = channels(title="first", artifacts=["a", "b"])
    assert thread == thread_shape(metadata={"copied": True}, values=values)
    history = await client.threads.get_history(tid)
    assert [h["values"] for h in history] == [values, channels(title="first", artifacts=["a"])]
    assert [h["metadata"]["step"] for h in history] == [1, 0]


async def test_create_with_invalid_superstep_creates_nothing(
    client: LangGraphClient, key: str
) -> None:
    tid = f"{key}-steps"
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.create(
            thread_id=tid,
            supersteps=[{"updates": [{"values": {"nope": 1}, "as_node": "model"}]}],
        )
    assert raised.value.response.json() == detail("unknown state channel(s): nope")
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_create_with_ttl_is_refused_with_a_clear_message(client: LangGraphClient) -> None:
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.create(ttl=60)
    assert raised.value.response.json() == problem(
        "ttl: thread TTLs are not supported: threads are kept until deleted", "invalid_input"
    )


# -- get / update / delete ------------------------------------------------------------------


async def test_get_unknown_thread_is_404(client: LangGraphClient) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(NotFoundError) as raised:
        await client.threads.get(missing)
    assert raised.value.response.json() == problem(f"thread {missing} not found", "not_found")


async def test_get_with_include_ttl(client: LangGraphClient, server: LiveServer) -> None:
    thread = await client.threads.create()
    assert await client.threads.get(thread["thread_id"], include=["ttl"]) == {
        **thread,
        "ttl": None,
    }
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get(f"/threads/{thread['thread_id']}", params={"include": "bogus"})
    assert (response.status_code, response.json()) == (
        422,
        problem("include: unknown field(s) bogus; supported: ttl", "invalid_input"),
    )


async def test_update_merges_metadata(client: LangGraphClient) -> None:
    thread = await client.threads.create(metadata={"a": 1, "b": {"x": 1}})
    tid = thread["thread_id"]
    updated = await client.threads.update(tid, metadata={"b": {"y": 2}, "c": [1]})
    assert updated == thread_shape(tid, metadata={"a": 1, "b": {"y": 2}, "c": [1]})
    assert updated["created_at"] == thread["created_at"]
    assert at(updated["updated_at"]) > at(thread["updated_at"])
    assert updated["state_updated_at"] == thread["state_updated_at"]
    assert await client.threads.get(tid) == updated


async def test_update_return_minimal_is_204(client: LangGraphClient, server: LiveServer) -> None:
    thread = await client.threads.create(metadata={"a": 1})
    tid = thread["thread_id"]
    assert await client.threads.update(tid, metadata={"b": 2}, return_minimal=True) is None
    assert (await client.threads.get(tid))["metadata"] == {"a": 1, "b": 2}
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.patch(
            f"/threads/{tid}", json={"metadata": {}}, headers={"Prefer": "return=minimal"}
        )
    assert (response.status_code, response.content) == (204, b"")


async def test_update_unknown_thread_is_404_and_ttl_is_422(client: LangGraphClient) -> None:
    with pytest.raises(NotFoundError):
        await client.threads.update("no-such-thread", metadata={"a": 1})
    thread = await client.threads.create()
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.update(thread["thread_id"], metadata={"a": 1}, ttl=5)
    assert raised.value.response.json() == detail("ttl: thread TTLs are not supported")
    assert (await client.threads.get(thread["thread_id"]))["metadata"] == {}


async def test_delete_removes_record_checkpoints_and_files(
    client: LangGraphClient, server: LiveServer, key: str
) -> None:
    tid = f"{key}-del"
    await client.threads.create(thread_id=tid)
    await client.threads.update_state(tid, {"title": "doomed"})
    outputs = thread_dir(server, tid) / "user-data" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "a.md").write_text("report")

    assert await client.threads.delete(tid) is None

    assert not thread_dir(server, tid).exists()
    for call in (
        client.threads.get(tid),
        client.threads.get_state(tid),
        client.threads.get_history(tid),
        client.threads.delete(tid),
    ):
        with pytest.raises(NotFoundError):
            await call
    # The same id again starts from nothing: no checkpoint survived.
    assert await client.threads.create(thread_id=tid) == thread_shape(tid)
    assert await client.threads.get_history(tid) == []


async def test_delete_unknown_thread_is_404(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.delete("/threads/never-created")
    assert (response.status_code, response.json()) == (
        404,
        problem("thread never-created not found", "not_found"),
    )


# -- search / count -------------------------------------------------------------------------


async def _make_suite(client: LangGraphClient, key: str) -> list[dict[str, Any]]:
    """Three threads in creation order, ids sorting in the same order."""
    threads = []
    for n, tags in enumerate((["a"], ["a", "b"], ["b", "c"])):
        threads.append(
            await client.threads.create(
                thread_id=f"{key}-{n}",
                metadata={"suite": key, "n": n, "tags": tags, "deep": {"l": [n, {"x": n}]}},
            )
        )
    await client.threads.update_state(threads[1]["thread_id"], {"artifacts": ["/o/1.md"]})
    await client.threads.update_state(threads[2]["thread_id"], {"title": "t2"})
    return [await client.threads.get(t["thread_id"]) for t in threads]


async def test_search_filters_by_metadata_containment(client: LangGraphClient, key: str) -> None:
    t0, t1, t2 = await _make_suite(client, key)

    async def ids(**kwargs: Any) -> list[str]:
        found = await client.threads.search(**kwargs)
        return [t["thread_id"] for t in found]

    assert await client.threads.search(metadata={"suite": key}) == [t2, t1, t0]
    assert await ids(metadata={"suite": key, "tags": ["a"]}) == [t1["thread_id"], t0["thread_id"]]
    assert await ids(metadata={"suite": key, "tags": ["c", "b"]}) == [t2["thread_id"]]
    assert await ids(metadata={"suite": key, "deep": {"l": [{"x": 1}]}}) == [t1["thread_id"]]
    assert await ids(metadata={"suite": key, "deep": {"l": [0]}}) == [t0["thread_id"]]
    assert await ids(metadata={"suite": key, "n": 1.0}) == [t1["thread_id"]]  # JSON numbers
    assert await ids(metadata={"suite": key, "tags": "a"}) == []  # not a list: no match
    assert await ids(metadata={"suite": key, "n": True}) == []


async def test_search_filters_by_values_status_and_ids(client: LangGraphClient, key: str) -> None:
    t0, t1, t2 = await _make_suite(client, key)
    suite = {"suite": key}
    assert await client.threads.search(metadata=suite, values={"artifacts": ["/o/1.md"]}) == [t1]
    assert await client.threads.search(metadata=suite, values={"title": "t2"}) == [t2]
    assert await client.threads.search(metadata=suite, status="idle") == [t2, t1, t0]
    for status in ("busy", "interrupted", "error"):
        assert await client.threads.search(metadata=suite, status=status) == []
    ids = [t0["thread_id"], t2["thread_id"], "no-such-thread"]
    assert await client.threads.search(ids=ids) == [t2, t0]


async def test_search_sorts_and_pages(client: LangGraphClient, key: str) -> None:
    t0, t1, t2 = await _make_suite(client, key)
    suite = {"suite": key}
    search = client.threads.search
    assert await search(metadata=suite, sort_by="thread_id", sort_order="asc") == [t0, t1, t2]
    assert await search(metadata=suite, sort_by="thread_id", sort_order="desc") == [t2, t1, t0]
    assert await search(metadata=suite, sort_by="created_at", sort_order="asc") == [t0, t1, t2]
    # t0 was not updated after creation; t1 then t2 were, in that order.
    assert await search(metadata=suite, sort_by="updated_at") == [t2, t1, t0]
    assert await search(metadata=suite, sort_by="state_updated_at") == [t2, t1, t0]
    assert await search(metadata=suite, sort_by="status", sort_order="asc") == [t0, t1, t2]
    pages = [
        await search(metadata=suite, limit=2, offset=0, sort_order="asc"),
        await search(metadata=suite, limit=2, offset=2, sort_order="asc"),
        await search(metadata=suite, limit=2, offset=4, sort_order="asc"),
    ]
    assert pages == [[t0, t1], [t2], []]


async def test_search_select_and_extract(client: LangGraphClient, key: str) -> None:
    t0, t1, t2 = await _make_suite(client, key)
    found = await client.threads.search(
        metadata={"suite": key}, select=["thread_id", "status"], sort_order="asc"
    )
    assert found == [{"thread_id": t["thread_id"], "status": "idle"} for t in (t0, t1, t2)]
    extracted = await client.threads.search(
        metadata={"suite": key},
        select=["thread_id"],
        extract={"n": "metadata.n", "x": "metadata.deep.l[-1].x", "art": "values.artifacts[0]"},
        sort_order="asc",
    )
    assert extracted == [
        {"thread_id": t0["thread_id"], "extracted": {"n": 0, "x": 0, "art": None}},
        {"thread_id": t1["thread_id"], "extracted": {"n": 1, "x": 1, "art": "/o/1.md"}},
        {"thread_id": t2["thread_id"], "extracted": {"n": 2, "x": 2, "art": None}},
    ]


async def test_search_pagination_headers(
    client: LangGraphClient, server: LiveServer, key: str
) -> None:
    await _make_suite(client, key)
    async with httpx.AsyncClient(base_url=server.url) as http:
        first = await http.post("/threads/search", json={"metadata": {"suite": key}, "limit": 2})
        last = await http.post(
            "/threads/search", json={"metadata": {"suite": key}, "limit": 2, "offset": 2}
        )
    assert first.status_code == last.status_code == 200
    assert (first.headers["X-Pagination-Total"], first.headers["X-Pagination-Next"]) == ("3", "2")
    assert len(first.json()) == 2
    assert last.headers["X-Pagination-Total"] == "3"
    assert "X-Pagination-Next" not in last.headers
    assert len(last.json()) == 1


async def test_count(client: LangGraphClient, key: str) -> None:
    await _make_suite(client, key)
    suite = {"suite": key}
    assert await client.threads.count(metadata=suite) == 3
    assert await client.threads.count(metadata={**suite, "tags": ["b"]}) == 2
    assert await client.threads.count(metadata=suite, values={"title": "t2"}) == 1
    assert await client.threads.count(metadata=suite, status="idle") == 3
    assert await client.threads.count(metadata=suite, status="busy") == 0
    assert await client.threads.count(metadata={"suite": f"{key}-none"}) == 0
    assert await client.threads.count() >= 3


# -- copy / prune ---------------------------------------------------------------------------


async def test_copy_keeps_metadata_state_history_and_files(
    mode_client: LangGraphClient, mode_server: LiveServer
) -> None:
    client, server = mode_client, mode_server
    source = await client.threads.create(metadata={"owner": "me", "tags": ["x"]})
    sid = source["thread_id"]
    await client.threads.update_state(sid, {"title": "one", "artifacts": ["/o/a.md"]})
    await client.threads.update_state(sid, {"artifacts": ["/o/b.md"]})
    outputs = thread_dir(server, sid) / "user-data" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "a.md").write_text("A")
    secret = server.workdir / f"secret-{sid}"
    secret.write_text("host file")
    (outputs / "link").symlink_to(secret)
    source = await client.threads.get(sid)

    copy = await client.threads.copy(sid)

    cid = copy["thread_id"]
    assert cid != sid
    assert copy == thread_shape(metadata=source["metadata"], values=source["values"])
    source_history = await client.threads.get_history(sid)
    copy_history = await client.threads.get_history(cid)
    assert len(copy_history) == len(source_history) == 2
    assert [h["values"] for h in copy_history] == [h["values"] for h in source_history]
    assert [h["checkpoint"]["thread_id"] for h in copy_history] == [cid, cid]
    copied = thread_dir(server, cid) / "user-data" / "outputs"
    assert (copied / "a.md").read_text() == "A"
    # A symlink is copied as a link, never as the host file it points to.
    assert (copied / "link").is_symlink()
    assert (copied / "link").readlink() == secret

    # Both evolve independently.
    await client.threads.update_state(cid, {"title": "copy"})
    assert (await client.threads.get_state(sid))["values"]["title"] == "one"
    assert (await client.threads.get_state(cid))["values"]["title"] == "copy"


async def test_copy_unknown_thread_is_404(client: LangGraphClient) -> None:
    with pytest.raises(NotFoundError):
        await client.threads.copy(str(uuid.uuid4()))


async def test_prune_delete_removes_threads(client: LangGraphClient, server: LiveServer) -> None:
    a = (await client.threads.create())["thread_id"]
    b = (await client.threads.create())["thread_id"]
    await client.threads.update_state(a, {"title": "a"})
    thread_dir(server, a).mkdir(parents=True)

    result = await client.threads.prune([a, b, a, "no-such-thread"])

    assert result == {"pruned_count": 2}
    assert not thread_dir(server, a).exists()
    for tid in (a, b):
        with pytest.raises(NotFoundError):
            await client.threads.get(tid)


async def test_prune_keep_latest_keeps_only_the_latest_checkpoint(
    mode_client: LangGraphClient,
) -> None:
    client = mode_client
    thread = await client.threads.create(metadata={"p": 1})
    tid = thread["thread_id"]
    for title in ("one", "two", "three"):
        await client.threads.update_state(tid, {"title": title, "artifacts": [title]})
    latest = await client.threads.get_state(tid)
    record = await client.threads.get(tid)

    assert await client.threads.prune([tid], strategy="keep_latest") == {"pruned_count": 1}

    history = await client.threads.get_history(tid)
    assert [h["values"] for h in history] == [latest["values"]]
    assert history[0]["checkpoint_id"] == latest["checkpoint_id"]
    assert (await client.threads.get_state(tid))["values"] == latest["values"]
    assert await client.threads.get(tid) == record
    # The thread still takes updates after pruning.
    await client.threads.update_state(tid, {"title": "four"})
    assert (await client.threads.get_state(tid))["values"]["title"] == "four"


# -- get_state / update_state ---------------------------------------------------------------


async def test_get_state_of_a_fresh_thread(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]
    assert await client.threads.get_state(tid) == {
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": {},
        "created_at": None,
        "checkpoint": ref(tid, None),
        "parent_checkpoint": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


async def test_state_after_updates_and_at_each_checkpoint(
    mode_client: LangGraphClient, mode_server: LiveServer
) -> None:
    client = mode_client
    tid = (await client.threads.create())["thread_id"]
    entry = await entry_node(client)
    first = await client.threads.update_state(tid, {"title": "one"})
    second = await client.threads.update_state(
        tid, {"messages": [{"role": "user", "content": "hi", "id": "m1"}]}
    )
    assert first == update_response(tid)
    assert second == update_response(tid)
    assert first["checkpoint_id"] != second["checkpoint_id"]

    human = {
        "content": "hi",
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": "m1",
    }
    latest = state_shape(
        tid,
        channels(title="one", messages=[human]),
        step=1,
        next_nodes=[entry],
        checkpoint_id=second["checkpoint_id"],
        parent_id=first["checkpoint_id"],
        # delta mode: LangGraph counts the message updates since the last keyframe
        extra_metadata=delta_counters(mode_server, 1, 1),
    )
    earlier = state_shape(
        tid, channels(title="one"), step=0, next_nodes=[entry], checkpoint_id=first["checkpoint_id"]
    )
    assert await client.threads.get_state(tid) == latest
    assert await client.threads.get_state(tid, checkpoint_id=first["checkpoint_id"]) == earlier
    assert await client.threads.get_state(tid, checkpoint=first["checkpoint"]) == earlier
    assert await client.threads.get_state(tid, checkpoint=second["checkpoint"]) == latest
    thread = await client.threads.get(tid)
    assert thread["values"] == latest["values"]
    assert at(thread["state_updated_at"]) > at(thread["created_at"])


async def test_get_state_select(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]
    done = await client.threads.update_state(tid, {"title": "one", "artifacts": ["a"]})
    selected = await client.threads.get_state(tid, select=["values.title", "checkpoint_id"])
    assert selected == {"values": {"title": "one"}, "checkpoint_id": done["checkpoint_id"]}
    at = await client.threads.get_state(tid, checkpoint=done["checkpoint"], select=["next"])
    assert at == {"next": [await entry_node(client)]}
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.get_state(tid, select=["bogus"])
    assert raised.value.response.json() == detail("unknown state field 'bogus'")


async def test_get_state_unknown_checkpoint_or_thread_is_404(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.threads.update_state(tid, {"title": "one"})
    missing = "1f000000-0000-6000-8000-000000000000"
    expected = problem(f"checkpoint {missing} not found in thread {tid}", "not_found")
    with pytest.raises(NotFoundError) as raised:
        await client.threads.get_state(tid, checkpoint_id=missing)
    assert raised.value.response.json() == expected
    with pytest.raises(NotFoundError) as raised:
        await client.threads.get_state(tid, checkpoint=ref(tid, missing))  # type: ignore[arg-type]
    assert raised.value.response.json() == expected
    with pytest.raises(NotFoundError):
        await client.threads.get_state(str(uuid.uuid4()))


async def test_update_state_reducers(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]

    async def values_after(update: dict[str, Any]) -> dict[str, Any]:
        await client.threads.update_state(tid, update)
        return (await client.threads.get_state(tid))["values"]

    todo = {"content": "write", "status": "pending"}
    done = {"content": "write", "status": "completed"}
    image = {"mime_type": "image/png", "size": 3}
    # artifacts: order-preserving, de-duplicating and cumulative.
    assert await values_after({"artifacts": ["/o/a", "/o/b"]}) == channels(
        artifacts=["/o/a", "/o/b"]
    )
    assert await values_after({"artifacts": ["/o/c", "/o/a", "/o/c"]}) == channels(
        artifacts=["/o/a", "/o/b", "/o/c"]
    )
    # todos: a list replaces, None keeps, [] clears.
    state = await values_after({"todos": [todo]})
    assert state == channels(artifacts=["/o/a", "/o/b", "/o/c"], todos=[todo])
    assert (await values_after({"todos": [done]}))["todos"] == [done]
    assert (await values_after({"todos": None, "title": "t"}))["todos"] == [done]
    assert (await values_after({"todos": []}))["todos"] == []
    # viewed_images: merged by path, {} clears.
    assert (await values_after({"viewed_images": {"/p/1.png": image}}))["viewed_images"] == {
        "/p/1.png": image
    }
    assert (await values_after({"viewed_images": {"/p/2.png": image}}))["viewed_images"] == {
        "/p/1.png": image,
        "/p/2.png": image,
    }
    assert await values_after({"viewed_images": {}}) == channels(
        artifacts=["/o/a", "/o/b", "/o/c"], todos=[], title="t"
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"nope": 1}, "unknown state channel(s): nope; writable channels: artifacts, messages"),
        ({"title": "ok", "zz": 1, "aa": 2}, "unknown state channel(s): aa, zz;"),
        ({"artifacts": "/o/a"}, "artifacts: Input should be a valid list"),
        ({"artifacts": ["/o/a", 3]}, "artifacts.1: Input should be a valid string"),
        ({"title": 5}, "title: Input should be a valid string"),
        ({"todos": [{"content": "x"}]}, "todos.0.status: Field required"),
        (
            {"viewed_images": {"/p.png": {"mime_type": "image/png", "base64": "AAAA"}}},
            "viewed_images./p.png.base64: Extra inputs are not permitted",
        ),
        (
            {"sandbox": {"sandbox_id": "local:another-thread"}},
            "sandbox: set by the server for the thread; clients cannot write it",
        ),
        (
            {"thread_data": {"workspace_path": "/etc"}},
            "thread_data: set by the server for the thread; clients cannot write it",
        ),
        (
            {"messages": 5},
            "values: messages: a message is an object with role (or type) and content, "
            "a string, or a [role, content] pair",
        ),
        ({"messages": [{"text": "x"}]}, "values: messages[0]: content: Field required"),
        ([{"title": "x"}], "values must be an object mapping channels to values"),
    ],
)
async def test_update_state_refuses_malformed_values(
    client: LangGraphClient, values: Any, message: str
) -> None:
    tid = (await client.threads.create())["thread_id"]
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.update_state(tid, values)
    assert raised.value.response.json() == detail(message)
    assert await client.threads.get_history(tid) == []


async def test_update_state_as_node_and_unknown_node(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]
    done = await client.threads.update_state(tid, {"title": "by model"}, as_node="model")
    assert done == update_response(tid)
    state = await client.threads.get_state(tid)
    assert state["values"] == channels(title="by model")
    assert state["metadata"]["source"] == "update"
    assert state["tasks"] == [pending(node) for node in state["next"]]
    with pytest.raises(UnprocessableEntityError) as raised:
        await client.threads.update_state(tid, {"title": "x"}, as_node="no_such_node")
    assert raised.value.response.json() == detail("unknown node 'no_such_node' for as_node")


async def test_update_state_at_a_checkpoint_forks_from_it(mode_client: LangGraphClient) -> None:
    client = mode_client
    tid = (await client.threads.create())["thread_id"]
    first = await client.threads.update_state(tid, {"title": "one", "artifacts": ["a"]})
    await client.threads.update_state(tid, {"title": "two", "artifacts": ["b"]})
    fork = await client.threads.update_state(
        tid, {"artifacts": ["c"]}, checkpoint_id=first["checkpoint_id"]
    )
    state = await client.threads.get_state(tid)
    assert state["checkpoint_id"] == fork["checkpoint_id"]
    assert state["parent_checkpoint_id"] == first["checkpoint_id"]
    assert state["values"] == channels(title="one", artifacts=["a", "c"])
    forked_again = await client.threads.update_state(
        tid, {"title": "three"}, checkpoint=fork["checkpoint"]
    )
    assert (await client.threads.get_state(tid))["parent_checkpoint_id"] == fork["checkpoint_id"]
    assert forked_again["checkpoint_id"] != fork["checkpoint_id"]


async def test_update_state_unknown_checkpoint_or_thread_is_404(client: LangGraphClient) -> None:
    tid = (await client.threads.create())["thread_id"]
    await client.threads.update_state(tid, {"title": "one"})
    missing = "1f000000-0000-6000-8000-000000000000"
    with pytest.raises(NotFoundError) as raised:
        await client.threads.update_state(tid, {"title": "x"}, checkpoint_id=missing)
    assert raised.value.response.json() == problem(
        f"checkpoint {missing} not found in thread {tid}", "not_found"
    )
    assert (await client.threads.get_state(tid))["values"]["title"] == "one"
    with pytest.raises(NotFoundError):
        await client.threads.update_state(str(uuid.uuid4()), {"title": "x"})


# -- get_history ----------------------------------------------------------------------------


async def _three_updates(client: LangGraphClient) -> tuple[str, list[dict[str, Any]]]:
    """A thread with three checkpoints; their states, newest first."""
    tid = (await client.threads.create())["thread_id"]
    for n in range(3):
        await client.threads.update_state(tid, {"title": f"t{n}", "artifacts": [f"/o/{n}"]})
    return tid, await client.threads.get_history(tid)


async def test_history_lists_states_newest_first(
    mode_client: LangGraphClient, mode_server: LiveServer
) -> None:
    client = mode_client
    tid, history = await _three_updates(client)
    entry = await entry_node(client)
    ids = [h["checkpoint_id"] for h in history]
    assert history == [
        state_shape(
            tid,
            channels(title=f"t{n}", artifacts=[f"/o/{i}" for i in range(n + 1)]),
            step=n,
            next_nodes=[entry],
            checkpoint_id=ids[2 - n],
            parent_id=ids[3 - n] if n else None,
            extra_metadata=delta_counters(mode_server, 0, n),
        )
        for n in (2, 1, 0)
    ]
    assert history[0] == await client.threads.get_state(tid)
    assert await client.threads.get_history(tid, limit=2) == history[:2]
    assert await client.threads.get_history(tid, limit=1) == history[:1]


async def test_history_before_as_id_and_as_checkpoint(mode_client: LangGraphClient) -> None:
    client = mode_client
    tid, history = await _three_updates(client)
    newest = history[0]
    assert await client.threads.get_history(tid, before=newest["checkpoint_id"]) == history[1:]
    # The reference server answers 500 to the Checkpoint dict the SDK sends; we must not.
    assert await client.threads.get_history(tid, before=newest["checkpoint"]) == history[1:]
    assert await client.threads.get_history(tid, before=history[1]["checkpoint"]) == history[2:]
    assert await client.threads.get_history(tid, before=history[2]["checkpoint_id"]) == []
    assert (
        await client.threads.get_history(tid, before=newest["checkpoint"], limit=1) == history[1:2]
    )


async def test_history_metadata_filter_and_checkpoint(mode_client: LangGraphClient) -> None:
    client = mode_client
    tid, history = await _three_updates(client)
    assert await client.threads.get_history(tid, metadata={"source": "update"}) == history
    assert await client.threads.get_history(tid, metadata={"step": 1}) == [history[1]]
    assert await client.threads.get_history(tid, metadata={"source": "loop"}) == []
    assert await client.threads.get_history(tid, checkpoint=history[1]["checkpoint"]) == [
        history[1]
    ]
    missing = ref(tid, "1f000000-0000-6000-8000-000000000000")
    with pytest.raises(NotFoundError):
        await client.threads.get_history(tid, checkpoint=missing)  # type: ignore[arg-type]


async def test_history_select_and_errors(client: LangGraphClient, server: LiveServer) -> None:
    tid, history = await _three_updates(client)
    selected = await client.threads.get_history(tid, select=["checkpoint_id", "values.title"])
    assert selected == [
        {"checkpoint_id": h["checkpoint_id"], "values": {"title": h["values"]["title"]}}
        for h in history
    ]
    with pytest.raises(NotFoundError):
        await client.threads.get_history(str(uuid.uuid4()))
    async with httpx.AsyncClient(base_url=server.url) as http:
        zero = await http.post(f"/threads/{tid}/history", json={"limit": 0})
        by_get = await http.get(f"/threads/{tid}/history", params={"limit": 2})
    assert (zero.status_code, zero.json()) == (
        422,
        problem("limit: Input should be greater than or equal to 1", "invalid_input"),
    )
    assert (by_get.status_code, by_get.json()) == (200, history[:2])
