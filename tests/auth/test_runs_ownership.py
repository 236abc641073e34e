"""Runs belong to their thread's owner, on both backends: the run route × caller table,
stateless runs, cancelling by status, the user a run carries, and spoofing through a run's
metadata, context and configurable."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError

from tests.auth.matrix import WHO
from tests.auth.parties import Party
from tests.auth.run_matrix import (
    RUN_ROUTES,
    RunRoute,
    call,
    message,
    runs_of,
    seed_run,
    settle,
    until_status,
)
from tests.support.live import LiveServer

#: what every run writes into its thread's metadata (as the LangGraph server does)
RUN_STAMP = {"graph_id": "lead_agent", "assistant_id": "bee7d354-5df5-5f26-a978-10ea053f620d"}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("route", RUN_ROUTES, ids=lambda r: r.name)
async def test_run_route_by_caller(
    accounts_server: LiveServer, people: tuple[Party, Party, Party], stub: object, route: RunRoute
) -> None:
    alice, bob, admin = people
    callers = {"owner": alice.api, "other": bob.api, "admin": admin.api}
    async with httpx.AsyncClient(base_url=accounts_server.url, timeout=120) as anonymous:
        for who in WHO:
            seed = await seed_run(alice, stub, active=route.active)
            try:
                before = await runs_of(alice, seed)
                response = await call(callers.get(who, anonymous), route, seed)
                assert response.status_code == route.expect[who], (who, response.text)
                if who in ("other", "anonymous"):
                    assert seed.secret not in response.text
                    assert await runs_of(alice, seed) == before
            finally:
                await settle(alice, seed)


async def test_cancel_by_status_touches_only_your_own(
    people: tuple[Party, Party, Party], stub: object
) -> None:
    alice, bob, _ = people
    mine = await seed_run(alice, stub, active=True)
    theirs = await seed_run(bob, stub, active=True)
    try:
        assert mine.active_run_id and theirs.active_run_id
        for body in (
            {"status": "all"},
            {"thread_id": mine.thread_id},
            {"run_ids": [mine.active_run_id]},
        ):
            response = await bob.api.post("/runs/cancel", json=body)
            assert response.status_code == 204
        assert await until_status(alice, mine, mine.active_run_id, {"running", "pending"}) in {
            "running",
            "pending",
        }
        cancelled = await bob.api.post("/runs/cancel", json={"status": "all"})
        assert cancelled.status_code == 204
        assert (
            await until_status(bob, theirs, theirs.active_run_id, {"interrupted"}) == "interrupted"
        )
        assert (await until_status(alice, mine, mine.active_run_id, {"running", "pending"})) in {
            "running",
            "pending",
        }
    finally:
        await settle(alice, mine)
        await settle(bob, theirs)


async def test_stateless_and_created_threads_belong_to_the_caller(
    people: tuple[Party, Party, Party],
) -> None:
    alice, bob, _ = people
    kept = await alice.api.post("/runs/wait", json={**message("hello"), "on_completion": "keep"})
    assert kept.status_code == 200, kept.text
    tid = kept.headers["content-location"].split("/")[2]
    assert (await alice.sdk.threads.get(tid))["metadata"] == {
        "user_id": alice.user_id,
        "stateless": True,
        **RUN_STAMP,
    }
    with pytest.raises(NotFoundError):
        await bob.sdk.threads.get(tid)
    created = await alice.sdk.runs.create(
        "brand-new-thread-" + alice.user_id[:8],
        "lead_agent",
        input={"messages": [{"role": "user", "content": "hi"}]},
        if_not_exists="create",
    )
    thread = await alice.sdk.threads.get(created["thread_id"])
    assert thread["metadata"] == {"user_id": alice.user_id, **RUN_STAMP}
    # another user cannot run on it, nor create it again under their name
    for if_not_exists in ("reject", "create"):
        with pytest.raises(NotFoundError):
            await bob.sdk.runs.create(
                created["thread_id"], "lead_agent", input=None, if_not_exists=if_not_exists
            )


async def test_a_run_carries_the_authenticated_user(
    people: tuple[Party, Party, Party],
) -> None:
    alice, _, admin = people
    tid = (await alice.sdk.threads.create())["thread_id"]
    for who in (alice, admin):
        run = await who.api.post(f"/threads/{tid}/runs/wait", json=message("who am I"))
        assert run.status_code == 200
        run_id = run.headers["content-location"].rsplit("/", 1)[1]
        journal = (await alice.api.get(f"/api/threads/{tid}/runs/{run_id}/events")).json()
        started = journal["events"][0]
        assert (started["kind"], started["data"]) == (
            "run_started",
            {"run_id": run_id, "user_id": who.user_id},
        )


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"user_id": "someone"}},
        {"metadata": {"owner_id": "someone"}},
        {"context": {"user_id": "someone"}},
        {"config": {"configurable": {"user_id": "someone"}}},
        {"config": {"configurable": {"langgraph_auth_user_id": "someone"}}},
        {"config": {"configurable": {"langgraph_auth_user": {"identity": "someone"}}}},
    ],
    ids=lambda b: str(b)[:48],
)
async def test_a_run_cannot_name_its_user(
    people: tuple[Party, Party, Party], body: dict[str, object]
) -> None:
    alice, bob, _ = people
    tid = (await alice.sdk.threads.create())["thread_id"]
    response = await alice.api.post(f"/threads/{tid}/runs", json={**message("hi"), **body})
    assert (response.status_code, response.json()["code"]) == (403, "server_owned_field")
    assert (await alice.api.get(f"/threads/{tid}/runs")).json() == []


async def test_the_sdk_streams_only_your_own_runs(people: tuple[Party, Party, Party]) -> None:
    alice, bob, _ = people
    tid = (await alice.sdk.threads.create())["thread_id"]
    events = [
        part.event
        async for part in alice.sdk.runs.stream(
            tid, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]}
        )
    ]
    assert events[0] == "metadata" and events[-1] in ("values", "end")
    with pytest.raises(NotFoundError):
        async for _ in bob.sdk.runs.stream(
            tid, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]}
        ):
            pass
    with pytest.raises(NotFoundError):
        await bob.sdk.runs.list(tid)
