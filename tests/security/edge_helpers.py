"""Helpers for the HTTP-edge attack corpus: raw bodies, and proofs that nothing was stored."""

from __future__ import annotations

from typing import Any

import httpx

JSON_HEADERS = {"content-type": "application/json"}


async def post_raw(
    http: httpx.AsyncClient, path: str, text: str | bytes, method: str = "POST"
) -> httpx.Response:
    """Send ``text`` exactly as written (httpx's own encoder cannot write a lone surrogate)."""
    content = text.encode() if isinstance(text, str) else text
    return await http.request(method, path, content=content, headers=JSON_HEADERS)


async def threads_with(http: httpx.AsyncClient, metadata: dict[str, Any]) -> list[Any]:
    """Every thread whose metadata contains ``metadata``."""
    response = await http.post("/threads/search", json={"metadata": metadata, "limit": 1000})
    assert response.status_code == 200, response.text
    found: list[Any] = response.json()
    return found


async def new_thread(http: httpx.AsyncClient, **metadata: Any) -> dict[str, Any]:
    response = await http.post("/threads", json={"metadata": metadata})
    assert response.status_code == 200, response.text
    thread: dict[str, Any] = response.json()
    return thread


async def assert_thread_untouched(http: httpx.AsyncClient, thread: dict[str, Any]) -> None:
    """The thread reads back as it was, has no run, and its state and history still answer."""
    tid = thread["thread_id"]
    again = await http.get(f"/threads/{tid}")
    assert (again.status_code, again.json()) == (200, thread)
    runs = await http.get(f"/threads/{tid}/runs")
    assert (runs.status_code, runs.json()) == (200, [])
    assert (await http.get(f"/threads/{tid}/state")).status_code == 200
    history = await http.post(f"/threads/{tid}/history", json={})
    assert history.status_code == 200
    found = await http.post("/threads/search", json={"ids": [tid]})
    assert (found.status_code, found.json()) == (200, [thread])
