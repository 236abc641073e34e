"""The run routes in the cross-user table: each tried by the owner, another user, the admin
and someone without credentials, on a thread seeded with a finished run (and, for cancel,
one still running)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.auth.matrix import Who
from tests.auth.parties import Party


def hold_script(stub: Any) -> str:
    """A script key for a thread whose first run answers at once and whose second run waits
    a minute at the model (until cancelled). The stub matches a conversation by its first
    user message, so the key goes there."""
    key = f"hold-{uuid.uuid4().hex[:10]}"
    stub.add_script(key, [{"content": "first"}, {"content": "finally", "delay": 60}])
    return key


def message(text: str) -> dict[str, Any]:
    return {
        "assistant_id": "lead_agent",
        "input": {"messages": [{"role": "user", "content": text}]},
    }


@dataclass(frozen=True, kw_only=True)
class RunSeed:
    thread_id: str
    run_id: str
    active_run_id: str | None
    secret: str


@dataclass(frozen=True, kw_only=True)
class RunRoute:
    name: str
    method: str
    path: str
    json: Callable[[RunSeed], Any] | None = None
    stream: bool = False
    active: bool = False
    expect: dict[Who, int] = field(
        default_factory=lambda: {"owner": 200, "other": 404, "admin": 200, "anonymous": 401}
    )

    def url(self, seed: RunSeed) -> str:
        run = seed.active_run_id if self.active else seed.run_id
        return self.path.format(tid=seed.thread_id, rid=run)


def _ok(status: int) -> dict[Who, int]:
    return {"owner": status, "other": 404, "admin": status, "anonymous": 401}


RUN_ROUTES: tuple[RunRoute, ...] = (
    RunRoute(
        name="create run",
        method="POST",
        path="/threads/{tid}/runs",
        json=lambda s: message("another question"),
    ),
    RunRoute(
        name="wait run", method="POST", path="/threads/{tid}/runs/wait", json=lambda s: message("q")
    ),
    RunRoute(
        name="stream run",
        method="POST",
        path="/threads/{tid}/runs/stream",
        json=lambda s: message("q"),
        stream=True,
    ),
    RunRoute(name="list runs", method="GET", path="/threads/{tid}/runs"),
    RunRoute(name="get run", method="GET", path="/threads/{tid}/runs/{rid}"),
    RunRoute(name="join run", method="GET", path="/threads/{tid}/runs/{rid}/join"),
    RunRoute(
        name="join run stream", method="GET", path="/threads/{tid}/runs/{rid}/stream", stream=True
    ),
    RunRoute(name="run journal", method="GET", path="/api/threads/{tid}/runs/{rid}/events"),
    RunRoute(name="run changes", method="GET", path="/api/threads/{tid}/runs/{rid}/changes"),
    RunRoute(
        name="run changes (DeerFlow)",
        method="GET",
        path="/api/threads/{tid}/runs/{rid}/workspace-changes",
    ),
    RunRoute(name="list runs under /api", method="GET", path="/api/threads/{tid}/runs"),
    RunRoute(name="delete run", method="DELETE", path="/threads/{tid}/runs/{rid}", expect=_ok(204)),
    RunRoute(
        name="cancel run",
        method="POST",
        path="/threads/{tid}/runs/{rid}/cancel",
        active=True,
        expect=_ok(202),
    ),
)


async def seed_run(owner: Party, stub: Any, *, active: bool) -> RunSeed:
    secret = f"secret-{uuid.uuid4().hex[:12]}"
    key = hold_script(stub)
    thread = await owner.sdk.threads.create(metadata={"secret": secret})
    tid = thread["thread_id"]
    done = await owner.api.post(
        f"/threads/{tid}/runs/wait", json=message(f"{key} tell me {secret}")
    )
    assert done.status_code == 200, done.text
    runs = (await owner.api.get(f"/threads/{tid}/runs")).json()
    active_id = None
    if active:
        held = await owner.api.post(f"/threads/{tid}/runs", json=message("and again"))
        assert held.status_code == 200, held.text
        active_id = held.json()["run_id"]
    return RunSeed(thread_id=tid, run_id=runs[0]["run_id"], active_run_id=active_id, secret=secret)


async def call(client: httpx.AsyncClient, route: RunRoute, seed: RunSeed) -> httpx.Response:
    url = route.url(seed)
    body = route.json(seed) if route.json is not None else None
    if route.stream:
        async with client.stream(route.method, url, json=body) as response:
            if response.status_code != 200:
                await response.aread()
            return response
    return await client.request(route.method, url, json=body)


async def runs_of(owner: Party, seed: RunSeed) -> list[tuple[str, str]]:
    runs = (await owner.api.get(f"/threads/{seed.thread_id}/runs", params={"limit": 100})).json()
    return sorted((r["run_id"], r["status"]) for r in runs)


async def settle(owner: Party, seed: RunSeed) -> None:
    """Cancel what the seed left running (the held run waits a minute at the model)."""
    if seed.active_run_id is not None:
        await owner.api.post(f"/threads/{seed.thread_id}/runs/{seed.active_run_id}/cancel")


async def until_status(owner: Party, seed: RunSeed, run_id: str, statuses: set[str]) -> str:
    deadline = time.monotonic() + 60
    while True:
        run = (await owner.api.get(f"/threads/{seed.thread_id}/runs/{run_id}")).json()
        if run["status"] in statuses or time.monotonic() > deadline:
            return str(run["status"])
        await asyncio.sleep(0.1)
