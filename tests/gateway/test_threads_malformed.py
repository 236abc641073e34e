"""Malformed input through raw HTTP: always a 422 naming what is wrong, never a 500.

The fuzz tests throw random JSON (huge integers, NaN, NUL characters, deep nesting, wrong
types, unknown keys) at the thread endpoints that write to the database, on both backends.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.live import LiveServer
from tests.support.problems import ERROR_KEYS, problem

# -- hand-picked cases ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("/threads", b"{bad"),
        ("/threads/search", b'{"metadata": '),
        ("/threads/count", b"[1,"),
        ("/threads/prune", b"\xff\xfe"),
    ],
)
async def test_invalid_json_body_is_422(server: LiveServer, path: str, content: bytes) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(
            path, content=content, headers={"content-type": "application/json"}
        )
    assert response.status_code == 422
    body = response.json()
    assert list(body) == ERROR_KEYS
    assert body["detail"].startswith("body: invalid JSON: ")


async def test_missing_and_non_object_bodies_are_422(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        empty = await http.post(f"/threads/{tid}/state", content=b"")
        array = await http.post("/threads/search", json=[1, 2])
        patch = await http.patch(f"/threads/{tid}", json={})
    assert (empty.status_code, empty.json()) == (
        422,
        problem("request body is required", "invalid_input"),
    )
    assert (array.status_code, array.json()) == (
        422,
        problem(
            "body: Input should be a valid dictionary or object to extract fields from",
            "invalid_input",
        ),
    )
    assert (patch.status_code, patch.json()) == (
        422,
        problem("metadata: Field required", "invalid_input"),
    )


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/threads", {"metadata": "x"}, "metadata: Input should be a valid dictionary"),
        ("/threads", {"if_exists": "update"}, "if_exists: Input should be 'raise' or 'do_nothing'"),
        ("/threads", {"thread_id": 7}, "thread_id: Input should be a valid string"),
        ("/threads", {"supersteps": [{"updates": []}]}, "supersteps[0].updates: List should have"),
        ("/threads/search", {"limit": "ten"}, "limit: Input should be a valid integer"),
        ("/threads/search", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ("/threads/search", {"offset": -1}, "offset: Input should be greater than or equal to 0"),
        ("/threads/search", {"status": "done"}, "status: Input should be 'idle', 'busy'"),
        ("/threads/search", {"sort_by": "metadata"}, "sort_by: Input should be 'thread_id'"),
        ("/threads/search", {"sort_order": "up"}, "sort_order: Input should be 'asc' or 'desc'"),
        ("/threads/search", {"ids": "abc"}, "ids: Input should be a valid list"),
        ("/threads/search", {"select": ["nope"]}, "select[0]: Input should be 'thread_id'"),
        ("/threads/search", {"extract": {"a": "x..y"}}, "extract.a: invalid path 'x..y'"),
        ("/threads/count", {"values": [1]}, "values: Input should be a valid dictionary"),
        ("/threads/prune", {"thread_ids": "a"}, "thread_ids: Input should be a valid list"),
        ("/threads/prune", {"thread_ids": [], "strategy": "all"}, "strategy: Input should be"),
    ],
)
async def test_wrong_types_are_422_naming_the_field(
    server: LiveServer, path: str, body: dict[str, Any], message: str
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(path, json=body)
    assert response.status_code == 422
    assert list(response.json()) == ERROR_KEYS
    assert response.json()["detail"].startswith(message)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/threads", {"bogus": 1}),
        ("/threads/search", {"metadata": {}, "bogus": 1}),
        ("/threads/count", {"metadata": {}, "bogus": 1}),
        ("/threads/{tid}/state", {"values": {}, "bogus": 1}),
        ("/threads/{tid}/history", {"bogus": 1}),
        ("/threads/{tid}/state/checkpoint", {"checkpoint": {}, "bogus": 1}),
    ],
)
async def test_unknown_field_is_422_naming_it(
    server: LiveServer, path: str, body: dict[str, Any]
) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        response = await http.post(path.format(tid=tid), json=body)
    assert (response.status_code, response.json()) == (
        422,
        problem("bogus: unsupported field", "invalid_input"),
    )


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (
            "/threads",
            {"metadata": {"a": "x\u0000y"}},
            "metadata.a: text may not contain NUL (\\u0000)",
        ),
        (
            "/threads",
            {"metadata": {"big": [1, 2**64]}},
            "metadata.big[1]: integer 18446744073709551616 is outside ±9007199254740991",
        ),
        (
            "/threads/search",
            {"values": {"x": float("nan")}},
            "values.x: NaN is not a JSON number",
        ),
        (
            "/threads/search",
            {"ids": ["ok", "n\u0000"]},
            "ids[1]: text may not contain NUL (\\u0000)",
        ),
        (
            "/threads/count",
            {"metadata": _nested(40)},
            "metadata" + ".k[0]" * 31 + ".k: nested deeper than 64 levels",
        ),
        (
            "/threads/{tid}/state",
            {"values": {"title": "\u0000"}},
            "values.title: text may not contain NUL (\\u0000)",
        ),
        (
            "/threads/{tid}/state",
            {"values": {"title": "x"}, "checkpoint_id": "\u0000"},
            "checkpoint_id: text may not contain NUL (\\u0000)",
        ),
        (
            "/threads/{tid}/history",
            {"before": {"checkpoint_id": "\u0000"}},
            "before.checkpoint_id: text may not contain NUL (\\u0000)",
        ),
    ],
)
async def test_values_no_backend_can_store_are_422(
    server: LiveServer, path: str, body: dict[str, Any], message: str
) -> None:
    content = json.dumps(body, allow_nan=True).encode()  # NaN: Python's parser accepts it
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        response = await http.post(
            path.format(tid=tid), content=content, headers={"content-type": "application/json"}
        )
    assert (response.status_code, response.json()) == (422, problem(message, "invalid_input"))


@pytest.mark.parametrize(
    "request_args",
    [
        ("GET", "/threads/a%00b"),
        ("GET", "/threads/a%00b/state"),
        ("GET", "/threads/{tid}/state/a%00b"),
        ("GET", "/threads/{tid}/history?before=a%00b"),
        ("DELETE", "/threads/a%00b"),
        ("PATCH", "/threads/a%00b"),
        ("POST", "/threads/a%00b/copy"),
    ],
)
async def test_nul_in_the_path_is_never_a_500(
    server: LiveServer, request_args: tuple[str, str]
) -> None:
    method, path = request_args
    async with httpx.AsyncClient(base_url=server.url) as http:
        tid = (await http.post("/threads", json={})).json()["thread_id"]
        kwargs: dict[str, Any] = {"json": {"metadata": {}}} if method == "PATCH" else {}
        response = await http.request(method, path.format(tid=tid), **kwargs)
    assert response.status_code in (404, 422)
    assert list(response.json()) == ERROR_KEYS


# -- fuzz -----------------------------------------------------------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and ±Infinity included: httpx sends them as bare NaN/Infinity
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _bodies(fields: list[str]) -> st.SearchStrategy[Any]:
    """Mostly objects with the endpoint's own field names (so validation gets past the
    first key), sometimes anything at all."""
    keys = st.sampled_from(fields) | st.text(max_size=6)
    return st.dictionaries(keys, _JSON, max_size=5) | _JSON


_THREAD_FIELDS = ["thread_id", "metadata", "if_exists", "supersteps", "ttl"]
_SEARCH_FIELDS = [
    "metadata",
    "values",
    "ids",
    "status",
    "limit",
    "offset",
    "sort_by",
    "sort_order",
    "select",
    "extract",
]
_STATE_FIELDS = ["values", "as_node", "checkpoint_id", "checkpoint"]
_CHANNELS = ["messages", "title", "artifacts", "todos", "viewed_images", "sandbox", "thread_data"]


def _state_bodies() -> st.SearchStrategy[Any]:
    values = st.dictionaries(st.sampled_from(_CHANNELS) | st.text(max_size=4), _JSON, max_size=3)
    return st.fixed_dictionaries({"values": values}) | _bodies(_STATE_FIELDS)


def _post(http: httpx.Client, path: str, body: Any) -> httpx.Response:
    content = json.dumps(body, allow_nan=True).encode()
    return http.post(path, content=content, headers={"content-type": "application/json"})


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        body = response.json()
        assert list(body) == ERROR_KEYS and isinstance(body["detail"], str), body


_FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_FUZZ
@given(body=_bodies(_THREAD_FIELDS))
def test_fuzz_create_thread(server: LiveServer, body: Any) -> None:
    with httpx.Client(base_url=server.url) as http:
        response = _post(http, "/threads", body)
        _check(response)
        if response.status_code == 200:  # what was stored reads back identically
            thread = response.json()
            assert http.get(f"/threads/{thread['thread_id']}").json() == thread


@_FUZZ
@given(body=_bodies(_SEARCH_FIELDS))
def test_fuzz_search_threads(server: LiveServer, body: Any) -> None:
    with httpx.Client(base_url=server.url) as http:
        _check(_post(http, "/threads/search", body))
        _check(_post(http, "/threads/count", body))


@_FUZZ
@given(body=_state_bodies())
def test_fuzz_update_state(server: LiveServer, body: Any) -> None:
    with httpx.Client(base_url=server.url) as http:
        tid = str(uuid.uuid4())
        assert http.post("/threads", json={"thread_id": tid}).status_code == 200
        response = _post(http, f"/threads/{tid}/state", body)
        _check(response)
        state = http.get(f"/threads/{tid}/state")
        assert state.status_code == 200
        if response.status_code == 200:
            assert state.json()["checkpoint_id"] == response.json()["checkpoint_id"]
        history = _post(http, f"/threads/{tid}/history", {"limit": 5, "before": body})
        _check(history)
        assert http.get("/ok").status_code == 200


async def test_json_too_deep_for_the_decoder_is_a_422(server: LiveServer) -> None:
    body = "[" * 100_000 + "]" * 100_000
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post(
            "/threads", content=body, headers={"Content-Type": "application/json"}
        )
    assert (response.status_code, response.json()) == (
        422,
        problem("body: nested deeper than 64 levels", "invalid_input"),
    )
