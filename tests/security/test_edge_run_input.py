"""The lead agent's ``input.messages`` is checked at admission: a shape LangChain cannot read
is a 422 naming ``input.messages[i]``, and no run is created.

Before, ``{"messages": 5}`` (or ``role: "bogus"``, or an object as ``content``) was admitted
and the run failed inside the graph.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import UnprocessableEntityError

from tests.security.edge_helpers import assert_thread_untouched, new_thread
from tests.support.live import LiveServer
from tests.support.problems import problem

ROLES = "'human', 'user', 'ai', 'assistant', 'system', 'developer', 'tool', 'function' or 'remove'"

CASES: list[tuple[Any, str]] = [
    (5, "input.messages: Input should be a valid list"),
    ("hello", "input.messages: Input should be a valid list"),
    (
        [5],
        "input.messages[0]: a message is an object with role (or type) and content, "
        "a string, or a [role, content] pair",
    ),
    (
        [{"role": "user", "content": "ok"}, {"role": "bogus", "content": "x"}],
        f"input.messages[1]: role: Input should be {ROLES}",
    ),
    ([{"type": "bogus", "content": "x"}], f"input.messages[0]: type: Input should be {ROLES}"),
    (
        [{"role": "user", "content": {"text": "x"}}],
        "input.messages[0]: content: content is text or a list of content blocks",
    ),
    (
        [{"role": "user", "content": [5]}],
        "input.messages[0]: content: content is text or a list of content blocks",
    ),
    ([{"content": "no role"}], "input.messages[0]: a message needs a role (or type)"),
    ([{"role": "user"}], "input.messages[0]: content: Field required"),
    ([{"role": "tool", "content": "x"}], "input.messages[0]: a tool message needs tool_call_id"),
    ([{"role": "remove", "content": ""}], "input.messages[0]: a remove message needs id"),
    (
        [["user"]],
        "input.messages[0]: a [role, content] pair has a role among human, user, ai, "
        "assistant, system, developer and content that is text or a list of content blocks",
    ),
    (
        [{"role": "ai", "content": "", "tool_calls": [{"name": "t", "args": {}}]}],
        "input.messages[0]: tool_calls[0].id: Field required",
    ),
]


@pytest.mark.parametrize(("messages", "detail"), CASES)
async def test_malformed_messages_are_refused_and_no_run_exists(
    server: LiveServer, messages: Any, detail: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        tid = thread["thread_id"]
        for route in ("runs", "runs/stream", "runs/wait"):
            response = await http.post(
                f"/threads/{tid}/{route}",
                json={"assistant_id": "lead_agent", "input": {"messages": messages}},
            )
            assert (response.status_code, response.json()) == (
                422,
                problem(detail, "invalid_input"),
            ), route
        stateless = await http.post(
            "/runs/wait", json={"assistant_id": "lead_agent", "input": {"messages": messages}}
        )
        assert (stateless.status_code, stateless.json()) == (422, problem(detail, "invalid_input"))
        await assert_thread_untouched(http, thread)


async def test_input_is_an_object(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        response = await http.post(
            f"/threads/{thread['thread_id']}/runs", json={"assistant_id": "lead_agent", "input": 5}
        )
        assert (response.status_code, response.json()) == (
            422,
            problem("input: Input should be a valid dictionary", "invalid_input"),
        )
        await assert_thread_untouched(http, thread)


async def test_the_sdk_sees_the_422(server: LiveServer) -> None:
    client = get_client(url=server.url)
    try:
        thread = await client.threads.create()
        with pytest.raises(UnprocessableEntityError) as raised:
            await client.runs.create(
                thread["thread_id"], "lead_agent", input={"messages": [{"role": "bogus"}]}
            )
        assert raised.value.response.json() == problem(
            f"input.messages[0]: role: Input should be {ROLES}", "invalid_input"
        )
        assert await client.runs.list(thread["thread_id"]) == []
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}],
        [{"type": "human", "content": [{"type": "text", "text": "hi"}], "id": "m1"}],
        ["hi"],
        [["user", "hi"]],
        [{"role": "user", "content": None, "custom_key": {"kept": True}}],
    ],
)
async def test_accepted_shapes_run(server: LiveServer, key: str, messages: Any) -> None:
    """Every accepted shape reaches the model and finishes (the stub answers anything)."""
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        thread = await new_thread(http)
        response = await http.post(
            f"/threads/{thread['thread_id']}/runs/wait",
            json={"assistant_id": "lead_agent", "input": {"messages": messages}},
        )
        assert response.status_code == 200, response.text
        runs = (await http.get(f"/threads/{thread['thread_id']}/runs")).json()
        assert [r["status"] for r in runs] == ["success"]


@pytest.mark.parametrize("given", [["a", "b"], {"id": "x"}, 5, True])
async def test_a_checkpoint_id_that_is_not_text_is_refused_and_no_run_exists(
    server: LiveServer, given: Any
) -> None:
    """Found by schemathesis: a list as ``config.configurable.checkpoint_id`` was admitted and
    the run failed inside the checkpointer (the database cannot bind a list)."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        response = await http.post(
            f"/threads/{thread['thread_id']}/runs",
            json={
                "assistant_id": "lead_agent",
                "input": {"messages": [{"role": "user", "content": "hi"}]},
                "config": {"configurable": {"checkpoint_id": given}},
            },
        )
        detail = "config.configurable.checkpoint_id must be a string (a checkpoint's id)"
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        await assert_thread_untouched(http, thread)
