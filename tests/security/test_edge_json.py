"""JSON bodies that no backend can keep are refused at the edge, on every route, with the
field named, and nothing of the request is stored.

Before the edge checked them, ``{"metadata": {"k": "\\ud800"}}`` created a thread and answered
500, after which reading or searching that thread answered 500 forever; a run whose
``config.recursion_limit`` was 10^40 was stored and broke its thread's run list the same way.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from tests.security.edge_helpers import (
    assert_thread_untouched,
    new_thread,
    post_raw,
    threads_with,
)
from tests.support.live import LiveServer
from tests.support.problems import problem

SURROGATE = "text may not contain a lone surrogate (\\ud800): it is not valid Unicode"
NUL = "text may not contain NUL (\\u0000)"


def _nested(depth: int, leaf: str = '"x"') -> str:
    return '{"k": ' * depth + leaf + "}" * depth


# (JSON text with {marker} to fill in, the 422 detail)
THREAD_BODIES = [
    ('{"metadata": {"m": "{marker}", "k": "\\ud800"}}', f"metadata.k: {SURROGATE}"),
    (
        '{"metadata": {"m": "{marker}", "k": ["ok", "a\\udfffb"]}}',
        "metadata.k[1]: text may not contain a lone surrogate (\\udfff): it is not valid Unicode",
    ),
    (
        '{"metadata": {"m": "{marker}", "\\ud800": 1}}',
        "metadata.\\ud800: a key may not contain a lone surrogate (\\ud800): it is not valid Unicode",
    ),
    ('{"metadata": {"m": "{marker}", "k": "a\\u0000b"}}', f"metadata.k: {NUL}"),
    (
        '{"metadata": {"m": "{marker}", "a\\u0000": 1}}',
        "metadata.a\\x00: a key may not contain NUL (\\u0000)",
    ),
    (
        '{"metadata": {"m": "{marker}", "n": 10000000000000000000000000000}}',
        "metadata.n: integer 10000000000000000000000000000 is outside ±9007199254740991",
    ),
    (
        '{"metadata": {"m": "{marker}", "n": -9223372036854775809}}',
        "metadata.n: integer -9223372036854775809 is outside ±9007199254740991",
    ),
    (
        '{"metadata": {"m": "{marker}", "n": 1e400}}',
        "metadata.n: number 1e400 is outside ±9007199254740991",
    ),
    (
        '{"metadata": {"m": "{marker}", "n": -1.5e19}}',
        "metadata.n: number -1.5e19 is outside ±9007199254740991",
    ),
    ('{"metadata": {"m": "{marker}", "n": NaN}}', "metadata.n: NaN is not a JSON number"),
    (
        '{"metadata": {"m": "{marker}", "n": -Infinity}}',
        "metadata.n: -Infinity is not a JSON number",
    ),
    (
        '{"metadata": {"m": "{marker}", "deep": ' + _nested(70) + "}}",
        "metadata.deep" + ".k" * 62 + ": nested deeper than 64 levels",
    ),
    (
        '{"metadata": {"m": "{marker}", "n": 1' + "0" * 5000 + "}}",
        "metadata.n: integer 100000000000…(5001 digits) is outside ±9007199254740991",
    ),
]


@pytest.mark.parametrize("prefix", ["", "/api"])  # the LangGraph API, also where DeerFlow's is
@pytest.mark.parametrize(("text", "detail"), THREAD_BODIES)
async def test_thread_create_refuses_unstorable_values_and_stores_nothing(
    server: LiveServer, text: str, detail: str, prefix: str
) -> None:
    marker = uuid.uuid4().hex
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await post_raw(http, f"{prefix}/threads", text.replace("{marker}", marker))
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        assert await threads_with(http, {"m": marker}) == []


@pytest.mark.parametrize(("text", "detail"), THREAD_BODIES)
async def test_thread_patch_refuses_unstorable_values_and_changes_nothing(
    server: LiveServer, text: str, detail: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http, m="before")
        response = await post_raw(
            http, f"/threads/{thread['thread_id']}", text.replace("{marker}", "x"), method="PATCH"
        )
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        await assert_thread_untouched(http, thread)


RUN_BODIES = [
    (
        '{"assistant_id": "lead_agent", "config": {"recursion_limit": 1' + "0" * 40 + "}}",
        "config.recursion_limit: integer 100000000000…(41 digits) is outside ±9007199254740991",
    ),
    (
        '{"assistant_id": "lead_agent", "metadata": {"n": 10000000000000000000000000000}}',
        "metadata.n: integer 10000000000000000000000000000 is outside ±9007199254740991",
    ),
    (
        '{"assistant_id": "lead_agent", "input": ' + _nested(500) + "}",
        "input" + ".k" * 63 + ": nested deeper than 64 levels",
    ),
    (
        '{"assistant_id": "lead_agent", "config": {"configurable": ' + _nested(300) + "}}",
        "config.configurable" + ".k" * 62 + ": nested deeper than 64 levels",
    ),
    (
        '{"assistant_id": "lead_agent", "input": {"messages": '
        '[{"role": "user", "content": "hi \\ud83d"}]}}',
        "input.messages[0].content: text may not contain a lone surrogate (\\ud83d): "
        "it is not valid Unicode",
    ),
]


@pytest.mark.parametrize("route", ["runs", "runs/stream", "runs/wait"])
@pytest.mark.parametrize(("text", "detail"), RUN_BODIES)
async def test_run_refuses_unstorable_values_and_stores_no_run(
    server: LiveServer, route: str, text: str, detail: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        response = await post_raw(http, f"/threads/{thread['thread_id']}/{route}", text)
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        await assert_thread_untouched(http, thread)


async def test_every_route_applies_the_same_rules(server: LiveServer) -> None:
    """The rules sit in front of the router: every operation the OpenAPI document lists
    refuses the same value with the same message, whether it reads a body or not."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        document = (await http.get("/openapi.json")).json()
        checked: list[str] = []
        for path, operations in document["paths"].items():
            for method in operations:
                url = path.replace("{thread_id}", thread["thread_id"])
                url = url.replace("{path}", "mnt/user-data/outputs/a.txt")
                url = re.sub(r"\{[a-z_]+\}", "x", url)
                response = await post_raw(
                    http, url, '{"metadata": {"k": "\\ud800"}}', method=method.upper()
                )
                assert (response.status_code, response.json()) == (
                    422,
                    problem(f"metadata.k: {SURROGATE}", "invalid_input"),
                ), f"{method.upper()} {path}"
                checked.append(f"{method.upper()} {path}")
        assert len(checked) >= 40, checked
        await assert_thread_untouched(http, thread)


async def test_a_batch_list_body_names_the_item(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        thread = await new_thread(http)
        tid = thread["thread_id"]
        text = (
            f'[{{"assistant_id": "lead_agent", "thread_id": "{tid}"}},'
            f' {{"assistant_id": "lead_agent", "thread_id": "{tid}", "metadata": {{"a\\u0000": 1}}}}]'
        )
        response = await post_raw(http, "/runs/batch", text)
        assert (response.status_code, response.json()) == (
            422,
            problem("[1].metadata.a\\x00: a key may not contain NUL (\\u0000)", "invalid_input"),
        )
        await assert_thread_untouched(http, thread)


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (
            "{bad",
            "body: invalid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
        ('{"a": 1', "body: invalid JSON: Expecting ',' delimiter (line 1, column 8)"),
        (
            b"\xff\xfe\x00",
            "body: invalid JSON: 'utf-16-le' codec can't decode byte 0x00 in position 2: truncated data",
        ),
        ("[" * 100_000 + "]" * 100_000, "body: nested deeper than 64 levels"),
        ("[" * 65 + "]" * 65, "" + "[0]" * 64 + ": nested deeper than 64 levels"),
    ],
)
async def test_malformed_json_is_a_422_saying_where(
    server: LiveServer, text: str | bytes, detail: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        before = (await http.post("/threads/count", json={})).json()
        response = await post_raw(http, "/threads", text)
        assert (response.status_code, response.json()) == (422, problem(detail, "invalid_input"))
        assert (await http.post("/threads/count", json={})).json() == before


async def test_values_at_the_limits_are_accepted_and_read_back(server: LiveServer) -> None:
    """What the rules let through is stored and read back unchanged."""
    metadata: dict[str, Any] = {
        "max": 2**53 - 1,
        "min": -(2**53 - 1),
        "float": 9.0e15,
        "small": -1.5e-300,
        "text": "emoji 😀 and \u2028 and é",
        "deep": _deep_object(60),
    }
    async with httpx.AsyncClient(base_url=server.url) as http:
        created = await http.post("/threads", json={"metadata": metadata})
        assert created.status_code == 200, created.text
        assert created.json()["metadata"] == metadata
        again = await http.get(f"/threads/{created.json()['thread_id']}")
        assert again.json() == created.json()


def _deep_object(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value
