"""``auth.policy``: a role's models are checked when a run is admitted (403 naming the model)
and listed alone by /api/models; its tools are the only ones the agent shows the model, and a
call naming another is refused instead of run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.auth.parties import Party, accounts_auth, initialize, sign_in, sign_up, unique_email
from tests.auth.run_matrix import message
from tests.support.live import LiveServer

POLICY = {"user": {"models": ["stub"], "tools": ["ls", "read_file", "present_files"]}}


@pytest.fixture
async def policed(
    make_auth_server: Callable[..., LiveServer],
) -> AsyncIterator[tuple[LiveServer, Party, Party]]:
    live = make_auth_server(accounts_auth(policy=POLICY))
    admin_email = unique_email("admin")
    assert (await initialize(live.url, admin_email)).status_code == 201
    user = await sign_up(live.url)
    admin = await sign_in(live.url, admin_email)
    try:
        yield live, user, admin
    finally:
        await user.aclose()
        await admin.aclose()


@pytest.mark.timeout(600)
async def test_models_and_tools_follow_the_role(
    policed: tuple[LiveServer, Party, Party], stub: Any, key: str
) -> None:
    _, user, admin = policed
    listed = (await user.api.get("/api/models")).json()["models"]
    assert [m["name"] for m in listed] == ["stub"]
    assert [m["name"] for m in (await admin.api.get("/api/models")).json()["models"]] == [
        "stub",
        "stub-vision",
    ]
    tid = (await user.sdk.threads.create())["thread_id"]
    refused = await user.api.post(
        f"/threads/{tid}/runs",
        json={**message("hi"), "config": {"configurable": {"model_name": "stub-vision"}}},
    )
    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "model 'stub-vision' is not allowed for the role 'user' "
        "(auth.policy.user.models); allowed: stub",
        "code": "model_not_allowed",
        "retryable": False,
    }
    assert (await user.api.get(f"/threads/{tid}/runs")).json() == []
    allowed = await admin.api.post(
        f"/threads/{tid}/runs/wait",
        json={**message("hi"), "context": {"model_name": "stub-vision"}},
    )
    assert allowed.status_code == 200

    # the model sees only the role's tools; a call naming another is refused, not run
    stub.add_script(
        key,
        [
            {
                "tool_calls": [
                    {
                        "name": "bash",
                        "args": {
                            "description": "x",
                            "command": "echo pwned > /mnt/user-data/outputs/p",
                        },
                    }
                ]
            },
            {"content": "done"},
        ],
    )
    own = (await user.sdk.threads.create())["thread_id"]
    done = await user.api.post(f"/threads/{own}/runs/wait", json=message(key))
    assert done.status_code == 200, done.text
    offered = {
        tool["function"]["name"]
        for body in stub.registry.requests_for(key)
        for tool in body.get("tools", [])
    }
    assert offered == {"ls", "read_file", "present_files"}
    state = await user.sdk.threads.get_state(own)
    results = [m for m in state["values"]["messages"] if m["type"] == "tool"]
    assert [(m["name"], m["status"]) for m in results] == [("bash", "error")]
    assert "your role may not use it" in results[0]["content"]
    uploads = await user.api.get(f"/api/threads/{own}/artifacts/mnt/user-data/outputs/p")
    assert uploads.status_code == 404
