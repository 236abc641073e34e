"""``auth.mode: custom``: LangGraph ``Auth`` objects run unchanged, with LangGraph's semantics
for authentication, handler choice, filters and metadata (on both backends: filters become
SQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import APIStatusError, NotFoundError

from tests.conftest import BACKENDS, base_config
from tests.support.live import LiveServer

HANDLERS = Path(__file__).parent / "handlers"


def custom_auth(file: str) -> dict[str, Any]:
    return {"mode": "custom", "custom": {"path": f"{HANDLERS / file}:auth"}}


@pytest.fixture(scope="module")
def docs_server(stub: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("docs-auth")
    config = base_config(stub, workdir / "data", auth=custom_auth("docs_auth.py"))
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def scoped_server(
    request: pytest.FixtureRequest, stub: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp(f"scoped-auth-{request.param}")
    extra: dict[str, Any] = {}
    if request.param == "postgres":
        extra["database"] = {"url": request.getfixturevalue("pg_url")}
    config = base_config(stub, workdir / "data", auth=custom_auth("scoped_auth.py"), **extra)
    live = LiveServer(config, workdir).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
async def clients() -> AsyncIterator[Callable[..., LangGraphClient]]:
    made: list[LangGraphClient] = []

    def make(url: str, api_key: str | None = None, **headers: str) -> LangGraphClient:
        client = get_client(url=url, api_key=api_key, headers=headers, timeout=60)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            await client.aclose()


async def test_the_documented_handler_makes_threads_private(
    docs_server: LiveServer, clients: Callable[..., LangGraphClient]
) -> None:
    user1 = clients(docs_server.url, Authorization="Bearer user1-token")
    user2 = clients(docs_server.url, Authorization="Bearer user2-token")
    thread = await user1.threads.create(metadata={"topic": "secret"})
    assert thread["metadata"] == {"topic": "secret", "owner": "user1"}
    await user1.threads.update_state(thread["thread_id"], {"title": "mine"})
    assert (await user1.threads.get_state(thread["thread_id"]))["values"]["title"] == "mine"
    for attempt in (
        user2.threads.get(thread["thread_id"]),
        user2.threads.get_state(thread["thread_id"]),
        user2.threads.update(thread["thread_id"], metadata={"x": 1}),
        user2.threads.delete(thread["thread_id"]),
        user2.threads.copy(thread["thread_id"]),
    ):
        with pytest.raises(NotFoundError):
            await attempt
    await user2.threads.create(metadata={"topic": "theirs"})
    mine = await user1.threads.search(limit=100)
    assert [t["metadata"]["owner"] for t in mine] == ["user1"]
    assert await user2.threads.count() == 1
    # a copy is made by the create handler: it belongs to whoever copied
    copy = await user1.threads.copy(thread["thread_id"])
    assert copy["metadata"]["owner"] == "user1"


async def test_the_documented_handler_refuses_bad_credentials(docs_server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=docs_server.url) as client:
        missing = await client.post("/threads/search", json={})
        invalid = await client.post(
            "/threads/search", json={}, headers={"Authorization": "Bearer nope"}
        )
        public = await client.get("/ok")
    assert missing.status_code == 401
    assert (invalid.status_code, invalid.json()["detail"]) == (401, "Invalid token")
    assert public.status_code == 200


async def test_owner_fields_stay_server_owned(
    docs_server: LiveServer, clients: Callable[..., LangGraphClient]
) -> None:
    user1 = clients(docs_server.url, Authorization="Bearer user1-token")
    for field in ("user_id", "owner_id"):
        with pytest.raises(APIStatusError) as refused:
            await user1.threads.create(metadata={field: "user2"})
        assert refused.value.status_code == 403
    # what the handler itself writes is what is stored (a client "owner" is overwritten)
    thread = await user1.threads.create(metadata={"owner": "user2"})
    assert thread["metadata"]["owner"] == "user1"


async def test_specific_handlers_filters_and_permissions(
    scoped_server: LiveServer, clients: Callable[..., LangGraphClient]
) -> None:
    alice = clients(scoped_server.url, api_key="alice-key")
    bob = clients(scoped_server.url, api_key="bob-key")
    carol = clients(scoped_server.url, api_key="carol-key")
    eve = clients(scoped_server.url, api_key="eve-key")

    shared = await alice.threads.create(metadata={"invite": ["bob"]})
    private = await alice.threads.create()
    assert shared["metadata"] == {"owner": "alice", "org": "acme", "participants": ["alice", "bob"]}
    # $contains: bob, invited, reads the shared thread only
    assert (await bob.threads.get(shared["thread_id"]))["thread_id"] == shared["thread_id"]
    with pytest.raises(NotFoundError):
        await bob.threads.get(private["thread_id"])
    assert [t["thread_id"] for t in await bob.threads.search()] == [shared["thread_id"]]
    # updates are the owner's alone
    with pytest.raises(NotFoundError):
        await bob.threads.update(shared["thread_id"], metadata={"x": 1})
    assert (await alice.threads.update(shared["thread_id"], metadata={"x": 1}))["metadata"][
        "x"
    ] == 1
    # delete: a bool handler on permissions (403 for the owner, allowed for carol)
    with pytest.raises(APIStatusError) as forbidden:
        await alice.threads.delete(private["thread_id"])
    assert forbidden.value.status_code == 403
    await carol.threads.delete(private["thread_id"])
    with pytest.raises(NotFoundError):
        await alice.threads.get(private["thread_id"])
    # eve has no write permission (the handler's 403 and detail), and sees nothing
    with pytest.raises(APIStatusError) as no_write:
        await eve.threads.create()
    assert no_write.value.status_code == 403
    assert await eve.threads.search() == []


async def test_handler_statuses_pass_through(scoped_server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=scoped_server.url) as client:
        teapot = await client.post("/threads/search", json={}, headers={"x-api-key": "teapot"})
        bad = await client.post("/threads/search", json={}, headers={"x-api-key": "nope"})
        forbidden = await client.post("/threads", json={}, headers={"x-api-key": "eve-key"})
    assert (teapot.status_code, teapot.json()["detail"]) == (418, "I'm a teapot")
    assert (bad.status_code, bad.json()["detail"]) == (401, "Invalid API key")
    assert forbidden.json() == {
        "detail": "User lacks the required permissions.",
        "code": "auth_handler_rejected",
        "retryable": False,
    }


async def test_assistants_follow_the_handlers_too(
    docs_server: LiveServer, scoped_server: LiveServer, clients: Callable[..., LangGraphClient]
) -> None:
    # the tutorial's owner filter also applies to assistants: the system one has no owner
    user1 = clients(docs_server.url, Authorization="Bearer user1-token")
    assert await user1.assistants.search() == []
    assert await user1.assistants.count() == 0
    with pytest.raises(NotFoundError):
        await user1.assistants.get("lead_agent")
    # deny by default: no assistants handler, so the global one refuses
    alice = clients(scoped_server.url, api_key="alice-key")
    with pytest.raises(APIStatusError) as denied:
        await alice.assistants.search()
    assert denied.value.status_code == 403


async def test_runs_follow_the_thread_handlers(
    docs_server: LiveServer, scoped_server: LiveServer, clients: Callable[..., LangGraphClient]
) -> None:
    user1 = clients(docs_server.url, Authorization="Bearer user1-token")
    user2 = clients(docs_server.url, Authorization="Bearer user2-token")
    hello = {"messages": [{"role": "user", "content": "hello"}]}
    tid = (await user1.threads.create())["thread_id"]
    result = await user1.runs.wait(tid, "lead_agent", input=hello)
    assert isinstance(result, dict) and result["messages"][-1]["type"] == "ai"
    runs = await user1.runs.list(tid)
    # the create_run handler stamped the run's metadata too
    assert [r["metadata"].get("owner") for r in runs] == ["user1"]
    for attempt in (
        user2.runs.create(tid, "lead_agent", input=hello),
        user2.runs.list(tid),
        user2.runs.get(tid, runs[0]["run_id"]),
    ):
        with pytest.raises(NotFoundError):
            await attempt
    # a thread a run creates carries what the handler stamped, so its owner finds it
    made = await user1.runs.create(
        "docs-made-by-a-run", "lead_agent", input=hello, if_not_exists="create"
    )
    assert (await user1.threads.get(made["thread_id"]))["metadata"]["owner"] == "user1"
    with pytest.raises(NotFoundError):
        await user2.threads.get(made["thread_id"])
    # deny by default: the scoped handlers have no create_run handler, the global one refuses
    alice = clients(scoped_server.url, api_key="alice-key")
    own = (await alice.threads.create())["thread_id"]
    with pytest.raises(APIStatusError) as denied:
        await alice.runs.create(own, "lead_agent", input=hello)
    assert denied.value.status_code == 403
