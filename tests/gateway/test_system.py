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
