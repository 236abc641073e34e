"""Health, info and the OpenAPI document."""

from __future__ import annotations

import httpx

from tests.support.live import LiveServer


async def test_ok_info_and_openapi(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        ok = await http.get("/ok")
        info = await http.get("/info")
        spec = await http.get("/openapi.json")
    assert (ok.status_code, ok.json()) == (200, {"ok": True})
    assert info.status_code == 200
    assert set(info.json()) == {"version", "langgraph_py_version", "flags"}
    paths = set(spec.json()["paths"])
    assert {"/threads", "/threads/search", "/threads/{thread_id}/runs/stream", "/ok"} <= paths


async def test_unknown_route_is_404_with_detail(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


async def test_unimplemented_langgraph_routes_say_so(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        commands = await http.post("/threads/t1/commands", json={})
        events = await http.post("/threads/t1/stream/events", json={})
        crons = await http.post("/runs/crons/search", json={})
        store = await http.put("/store/items", json={})
    assert [r.status_code for r in (commands, events, crons, store)] == [404] * 4
    assert (
        commands.json()
        == events.json()
        == {
            "detail": "not supported by fawn: the thread-stream protocol (client.threads.stream) "
            "is not implemented; use client.runs.stream or client.threads.join_stream"
        }
    )
    assert crons.json() == {"detail": "not supported by fawn: crons are not implemented"}
    assert store.json() == {"detail": "not supported by fawn: the store API is not implemented"}
