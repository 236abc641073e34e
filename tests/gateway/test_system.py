"""Health, info and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx

from tests.support.live import LiveServer
from tests.support.problems import problem


async def test_ok_info_and_openapi(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        ok = await http.get("/ok")
        info = await http.get("/info")
        spec = await http.get("/openapi.json")
    assert (ok.status_code, ok.json()) == (200, {"ok": True})
    assert info.status_code == 200
    assert set(info.json()) == {"version", "langgraph_py_version", "flags"}
    document = spec.json()
    assert {"/threads", "/threads/search", "/threads/{thread_id}/runs/stream", "/ok"} <= set(
        document["paths"]
    )
    # the thread protocol's cursors, as the server holds them (0 to 2^53 - 1)
    stream = document["components"]["schemas"]["EventStreamRequest"]["properties"]
    for name in ("since", "depth"):
        bounded = [s for s in stream[name]["anyOf"] if s.get("type") == "integer"]
        assert bounded == [{"type": "integer", "minimum": 0, "maximum": 2**53 - 1}], name
    # pydantic's own constraint names are not JSON Schema: no validator reads them
    assert not set(_keys(document)) & {"ge", "gt", "le", "lt"}


def _keys(schema: object) -> Iterator[str]:
    """Every key of every object in ``schema`` (but property names)."""
    if isinstance(schema, list):
        for item in schema:
            yield from _keys(item)
    elif isinstance(schema, dict):
        for key, value in schema.items():
            if key != "properties":
                yield key
            yield from _keys(list(value.values()) if key == "properties" else value)


async def test_unknown_route_is_404_with_detail(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get("/nope")
    assert response.status_code == 404
    assert response.json() == problem("Not Found", "not_found")


async def test_unimplemented_langgraph_routes_say_so(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        crons = await http.post("/runs/crons/search", json={})
        store = await http.put("/store/items", json={})
    assert [r.status_code for r in (crons, store)] == [404] * 2
    assert crons.json() == problem(
        "not supported by fawn: crons are not implemented", "not_supported"
    )
    assert store.json() == problem(
        "not supported by fawn: the store API is not implemented", "not_supported"
    )


async def test_cors_origins_allow_exactly_the_configured_origins(
    make_server: Callable[..., LiveServer],
) -> None:
    live = make_server(server={"cors_origins": ["http://app.example"]})
    preflight = {"Access-Control-Request-Method": "POST"}
    async with httpx.AsyncClient(base_url=live.url) as http:
        allowed = await http.options(
            "/threads", headers={"Origin": "http://app.example", **preflight}
        )
        refused = await http.options(
            "/threads", headers={"Origin": "http://evil.example", **preflight}
        )
        simple = await http.get("/ok", headers={"Origin": "http://app.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://app.example"
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    assert simple.headers["access-control-allow-origin"] == "http://app.example"
    assert "X-Pagination-Total" in simple.headers["access-control-expose-headers"]


async def test_every_json_body_in_the_document_closes_its_properties(server: LiveServer) -> None:
    """The edge refuses unstorable JSON anywhere in a body, even in a property no model
    reads (schemathesis found three routes whose schema let such a property through). So
    every JSON body object says ``additionalProperties: false``; arrays of them likewise."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        document = (await http.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]

    def resolve(schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    open_bodies = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            schema = resolve(body["schema"])
            if schema.get("type") == "array":
                schema = resolve(schema["items"])
            if schema.get("additionalProperties") is not False:
                open_bodies.append(f"{method.upper()} {path}")
    assert open_bodies == []
