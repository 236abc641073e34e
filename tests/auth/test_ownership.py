"""Ownership on both backends: the route × caller table, search and count, copies, and two
users and an admin driving the SDK side by side."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.errors import NotFoundError

from tests.auth.matrix import THREAD_ROUTES, WHO, Route, call, seed, snapshot
from tests.auth.parties import Party
from tests.support.live import LiveServer


@pytest.mark.parametrize("route", THREAD_ROUTES, ids=lambda r: r.name)
async def test_thread_route_by_caller(
    accounts_server: LiveServer, people: tuple[Party, Party, Party], route: Route
) -> None:
    alice, bob, admin = people
    callers = {"owner": alice.api, "other": bob.api, "admin": admin.api}
    async with httpx.AsyncClient(base_url=accounts_server.url, timeout=60) as anonymous:
        for who in WHO:
            s = await seed(alice)
            before = await snapshot(alice, s)
            response = await call(callers.get(who, anonymous), route, s)
            assert response.status_code == route.expect[who], (who, response.text)
            if who in ("other", "anonymous"):
                # nothing of the owner's thread reached them, and nothing changed
                assert s.secret not in response.text
                assert await snapshot(alice, s) == before
                if route.name == "prune" and who == "other":
                    assert response.json() == {"pruned_count": 0}


async def test_search_and_count_see_only_your_own(people: tuple[Party, Party, Party]) -> None:
    alice, bob, admin = people
    mine = [await alice.sdk.threads.create(metadata={"tag": "shared-tag"}) for _ in range(2)]
    theirs = await bob.sdk.threads.create(metadata={"tag": "shared-tag"})
    found = await alice.sdk.threads.search(metadata={"tag": "shared-tag"}, limit=100)
    assert sorted(t["thread_id"] for t in found) == sorted(t["thread_id"] for t in mine)
    assert await alice.sdk.threads.count(metadata={"tag": "shared-tag"}) == 2
    assert await bob.sdk.threads.count(metadata={"tag": "shared-tag"}) == 1
    # naming another's thread id, or filtering on its owner, finds nothing
    by_id = await alice.sdk.threads.search(ids=[theirs["thread_id"]])
    assert by_id == []
    by_owner = await alice.sdk.threads.search(metadata={"user_id": bob.user_id})
    assert by_owner == []
    # the admin sees everyone's
    everyone = await admin.sdk.threads.search(metadata={"tag": "shared-tag"}, limit=1000)
    ids = {t["thread_id"] for t in everyone}
    assert {t["thread_id"] for t in [*mine, theirs]} <= ids


async def test_threads_carry_their_owner_in_metadata(people: tuple[Party, Party, Party]) -> None:
    alice, _, admin = people
    thread = await alice.sdk.threads.create(metadata={"topic": "x"})
    assert thread["metadata"] == {"topic": "x", "user_id": alice.user_id}
    patched = await alice.sdk.threads.update(thread["thread_id"], metadata={"topic": "y"})
    assert patched["metadata"] == {"topic": "y", "user_id": alice.user_id}
    # an admin's edit does not make the thread the admin's
    edited = await admin.sdk.threads.update(thread["thread_id"], metadata={"seen": True})
    assert edited["metadata"]["user_id"] == alice.user_id


async def test_a_copy_belongs_to_the_copier(people: tuple[Party, Party, Party]) -> None:
    alice, bob, admin = people
    source = await alice.sdk.threads.create(metadata={"topic": "original"})
    await alice.sdk.threads.update_state(source["thread_id"], {"title": "alice's"})
    copy = await admin.sdk.threads.copy(source["thread_id"])
    assert copy["metadata"] == {"topic": "original", "user_id": admin.user_id}
    # the admin's copy is not alice's: she cannot see it, the admin can
    with pytest.raises(NotFoundError):
        await alice.sdk.threads.get(copy["thread_id"])
    state = await admin.sdk.threads.get_state(copy["thread_id"])
    assert state["values"]["title"] == "alice's"
    own = await alice.sdk.threads.copy(source["thread_id"])
    assert own["metadata"]["user_id"] == alice.user_id
    with pytest.raises(NotFoundError):
        await bob.sdk.threads.copy(source["thread_id"])


async def test_sdk_side_by_side(people: tuple[Party, Party, Party]) -> None:
    """Two users and the admin, each through the SDK, interleaved."""
    alice, bob, admin = people
    a = await alice.sdk.threads.create(metadata={"who": "alice"})
    b = await bob.sdk.threads.create(metadata={"who": "bob"})
    await alice.sdk.threads.update_state(a["thread_id"], {"title": "alice"})
    await bob.sdk.threads.update_state(b["thread_id"], {"title": "bob"})
    for reader, own, foreign in ((alice, a, b), (bob, b, a)):
        assert (await reader.sdk.threads.get(own["thread_id"]))["thread_id"] == own["thread_id"]
        for attempt in (
            reader.sdk.threads.get(foreign["thread_id"]),
            reader.sdk.threads.get_state(foreign["thread_id"]),
            reader.sdk.threads.get_history(foreign["thread_id"]),
            reader.sdk.threads.update(foreign["thread_id"], metadata={"x": 1}),
            reader.sdk.threads.update_state(foreign["thread_id"], {"title": "mine now"}),
            reader.sdk.threads.delete(foreign["thread_id"]),
        ):
            with pytest.raises(NotFoundError):
                await attempt
    for own in (a, b):
        state = await admin.sdk.threads.get_state(own["thread_id"])
        assert state["values"]["title"] == own["metadata"]["who"]
    await admin.sdk.threads.delete(b["thread_id"])
    with pytest.raises(NotFoundError):
        await bob.sdk.threads.get(b["thread_id"])
