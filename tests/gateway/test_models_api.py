"""``GET /api/models``: the configured models, described, never with their secrets."""

from __future__ import annotations

import httpx

from tests.support.live import LiveServer


async def test_models_are_listed_without_secrets(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.get("/api/models")
    assert (response.status_code, response.json()) == (
        200,
        {
            "models": [
                {
                    "name": "stub",
                    "display_name": "Stub model",
                    "model": "stub-model",
                    "supports_thinking": False,
                    "supports_vision": False,
                    "supports_reasoning_effort": False,
                    "description": None,
                },
                {
                    "name": "stub-vision",
                    "display_name": None,
                    "model": "stub-vision",
                    "supports_thinking": True,
                    "supports_vision": True,
                    "supports_reasoning_effort": False,
                    "description": None,
                },
            ]
        },
    )
    stub_url = server.config["models"][0]["base_url"]
    for secret in ("sk-test-secret", "api_key", "base_url", stub_url, "max_retries", "temperature"):
        assert secret not in response.text


async def test_models_route_is_in_the_openapi_document(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        spec = (await http.get("/openapi.json")).json()
    paths = spec["paths"]
    assert set(paths["/api/models"]) == {"get"}
    assert set(paths["/api/threads/{thread_id}/uploads"]) == {"get", "post"}
    assert set(paths["/api/threads/{thread_id}/uploads/{filename}"]) == {"delete"}
    assert set(paths["/api/threads/{thread_id}/artifacts/{path}"]) == {"get"}
    upload_body = paths["/api/threads/{thread_id}/uploads"]["post"]["requestBody"]
    assert upload_body["content"]["multipart/form-data"]["schema"]["required"] == ["files"]
