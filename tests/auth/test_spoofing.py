"""Who a request is can only come from its credential: not from metadata, state, or headers
that name someone else."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import APIStatusError

from tests.auth.parties import Party
from tests.support.live import LiveServer

FORGED_HEADERS = (
    "X-User-Id",
    "X-Forwarded-User",
    "X-Remote-User",
    "X-Auth-Request-User",
    "X-DeerFlow-Owner-User-Id",
    "X-DeerFlow-Internal-Token",
)


@pytest.mark.parametrize("field", ["user_id", "owner_id"])
async def test_metadata_cannot_name_an_owner(
    people: tuple[Party, Party, Party], field: str
) -> None:
    alice, bob, _ = people
    with pytest.raises(APIStatusError) as created:
        await alice.sdk.threads.create(metadata={field: bob.user_id})
    assert created.value.status_code == 403
    assert await bob.sdk.threads.count() == 0
    tid = (await alice.sdk.threads.create())["thread_id"]
    for value in (bob.user_id, alice.user_id):
        with pytest.raises(APIStatusError) as patched:
            await alice.sdk.threads.update(tid, metadata={field: value})
        assert patched.value.status_code == 403
    assert (await alice.sdk.threads.get(tid))["metadata"] == {"user_id": alice.user_id}


async def test_state_cannot_carry_an_owner(people: tuple[Party, Party, Party]) -> None:
    alice, bob, _ = people
    tid = (await alice.sdk.threads.create())["thread_id"]
    with pytest.raises(APIStatusError) as refused:
        await alice.sdk.threads.update_state(tid, {"user_id": bob.user_id})
    assert refused.value.status_code == 422
    assert (await alice.sdk.threads.get(tid))["metadata"]["user_id"] == alice.user_id


async def test_headers_naming_someone_else_are_ignored(
    accounts_server: LiveServer, people: tuple[Party, Party, Party]
) -> None:
    alice, bob, admin = people
    forged = dict.fromkeys(FORGED_HEADERS, bob.user_id)
    async with httpx.AsyncClient(
        base_url=accounts_server.url, headers={"x-api-key": alice.key, **forged}
    ) as client:
        thread = (await client.post("/threads", json={})).json()
        assert thread["metadata"] == {"user_id": alice.user_id}
        assert (await client.get("/api/v1/auth/me")).json()["id"] == alice.user_id
    assert await bob.sdk.threads.search(ids=[thread["thread_id"]]) == []
    # without a credential, naming the admin in headers gets nothing either
    forged_admin = dict.fromkeys(FORGED_HEADERS, admin.user_id)
    async with httpx.AsyncClient(base_url=accounts_server.url, headers=forged_admin) as client:
        response = await client.post("/threads/search", json={})
    assert (response.status_code, response.json()["code"]) == (401, "not_authenticated")
