"""The cross-user table: every thread route, tried by the owner, another user, the admin and
someone without credentials. A thread is seeded for each try (with state and an upload), so a
destructive call of one caller never decides another's answer."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from tests.auth.parties import Party

Who = Literal["owner", "other", "admin", "anonymous"]
WHO: tuple[Who, ...] = ("anonymous", "other", "admin", "owner")


@dataclass(frozen=True, kw_only=True)
class Seed:
    thread_id: str
    checkpoint_id: str
    secret: str


@dataclass(frozen=True, kw_only=True)
class Route:
    name: str
    method: str
    path: str
    json: Callable[[Seed], Any] | None = None
    multipart: bool = False
    stream: bool = False
    #: the status each caller gets; the default is the thread rule (another user's thread
    #: looks missing)
    expect: dict[Who, int] = field(
        default_factory=lambda: {"owner": 200, "other": 404, "admin": 200, "anonymous": 401}
    )

    def url(self, seed: Seed) -> str:
        return self.path.format(tid=seed.thread_id, cp=seed.checkpoint_id)


def _ok(status: int = 200) -> dict[Who, int]:
    return {"owner": status, "other": 404, "admin": status, "anonymous": 401}


THREAD_ROUTES: tuple[Route, ...] = (
    Route(name="get thread", method="GET", path="/threads/{tid}"),
    Route(
        name="patch thread",
        method="PATCH",
        path="/threads/{tid}",
        json=lambda s: {"metadata": {"touched": True}},
    ),
    Route(name="delete thread", method="DELETE", path="/threads/{tid}", expect=_ok(204)),
    Route(name="copy thread", method="POST", path="/threads/{tid}/copy", json=lambda s: {}),
    Route(name="get state", method="GET", path="/threads/{tid}/state"),
    Route(
        name="state at checkpoint",
        method="POST",
        path="/threads/{tid}/state/checkpoint",
        json=lambda s: {"checkpoint": {"checkpoint_id": s.checkpoint_id}},
    ),
    Route(name="state by id", method="GET", path="/threads/{tid}/state/{cp}"),
    Route(
        name="update state",
        method="POST",
        path="/threads/{tid}/state",
        json=lambda s: {"values": {"title": "overwritten"}},
    ),
    Route(name="history", method="POST", path="/threads/{tid}/history", json=lambda s: {}),
    Route(name="history (GET)", method="GET", path="/threads/{tid}/history"),
    Route(name="follow thread", method="GET", path="/threads/{tid}/stream", stream=True),
    Route(name="upload", method="POST", path="/api/threads/{tid}/uploads", multipart=True),
    Route(name="list uploads", method="GET", path="/api/threads/{tid}/uploads"),
    Route(name="delete upload", method="DELETE", path="/api/threads/{tid}/uploads/notes.txt"),
    Route(
        name="download artifact",
        method="GET",
        path="/api/threads/{tid}/artifacts/mnt/user-data/uploads/notes.txt",
    ),
    Route(
        name="patch thread (DeerFlow)",
        method="PATCH",
        path="/api/threads/{tid}",
        json=lambda s: {"metadata": {"deerflow_pinned": True}},
    ),
    # the seeded thread has no assistant turn: the owner's branch is refused as DeerFlow does
    Route(
        name="branch (DeerFlow)",
        method="POST",
        path="/api/threads/{tid}/branches",
        json=lambda s: {"message_id": "no-such-turn"},
        expect=_ok(409),
    ),
    Route(name="token usage (DeerFlow)", method="GET", path="/api/threads/{tid}/token-usage"),
    Route(name="state under /api", method="GET", path="/api/threads/{tid}/state"),
    # summarization is off on this server: the owner's compaction is DeerFlow's 409
    Route(
        name="compact (DeerFlow)",
        method="POST",
        path="/api/threads/{tid}/compact",
        json=lambda s: {},
        expect=_ok(409),
    ),
    Route(
        name="create with the same id",
        method="POST",
        path="/threads",
        json=lambda s: {"thread_id": s.thread_id, "if_exists": "do_nothing"},
        expect={"owner": 200, "other": 409, "admin": 200, "anonymous": 401},
    ),
    Route(
        name="prune",
        method="POST",
        path="/threads/prune",
        json=lambda s: {"thread_ids": [s.thread_id]},
        expect={"owner": 200, "other": 200, "admin": 200, "anonymous": 401},
    ),
)


async def seed(owner: Party) -> Seed:
    secret = f"secret-{uuid.uuid4().hex[:12]}"
    thread = await owner.sdk.threads.create(metadata={"secret": secret})
    tid = thread["thread_id"]
    update = await owner.sdk.threads.update_state(tid, {"title": secret})
    uploaded = await owner.api.post(
        f"/api/threads/{tid}/uploads", files={"files": ("notes.txt", secret.encode())}
    )
    assert uploaded.status_code == 200, uploaded.text
    return Seed(thread_id=tid, checkpoint_id=update["checkpoint"]["checkpoint_id"], secret=secret)


async def call(client: httpx.AsyncClient, route: Route, s: Seed) -> httpx.Response:
    url = route.url(s)
    if route.stream:
        async with client.stream(route.method, url) as response:
            if response.status_code != 200:
                await response.aread()  # an error body, short
            return response
    if route.multipart:
        return await client.request(
            route.method, url, files={"files": ("mine.txt", b"uploaded by the caller")}
        )
    body = route.json(s) if route.json is not None else None
    return await client.request(route.method, url, json=body)


async def snapshot(owner: Party, s: Seed) -> dict[str, Any]:
    """What the owner sees of a seeded thread (to prove another caller changed nothing)."""
    thread = await owner.api.get(f"/threads/{s.thread_id}")
    state = await owner.api.get(f"/threads/{s.thread_id}/state")
    uploads = await owner.api.get(f"/api/threads/{s.thread_id}/uploads")
    history = await owner.api.get(f"/threads/{s.thread_id}/history")
    return {
        "thread": thread.json(),
        "values": state.json()["values"],
        "uploads": sorted(f["filename"] for f in uploads.json()["files"]),
        "checkpoints": len(history.json()),
    }
