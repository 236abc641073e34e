"""``GET /api/models``: the configured chat models, for a client's model picker.

Only an allowlist of descriptive fields leaves the server: API keys, base URLs (which may
carry credentials) and the pass-through constructor keys never do.
"""

from __future__ import annotations

from typing import TypedDict

from fastapi import APIRouter, Response

from fawn.config.settings import ModelSettings
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.auth.policy import visible_models
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON

router = APIRouter(tags=["models"])


class ModelInfo(TypedDict):
    name: str
    display_name: str | None
    model: str
    supports_thinking: bool
    supports_vision: bool
    supports_reasoning_effort: bool
    description: str | None


def model_info(settings: ModelSettings) -> ModelInfo:
    return {
        "name": settings.name,
        "display_name": settings.display_name,
        "model": settings.model,
        "supports_thinking": settings.supports_thinking,
        "supports_vision": settings.supports_vision,
        "supports_reasoning_effort": settings.supports_reasoning_effort,
        "description": settings.description,
    }


@router.get("/api/models")
async def list_models(services: ServicesDep, caller: CallerDep) -> Response:
    """The models the caller's role may use (``auth.policy``), in configuration order (the
    first configured is the default)."""
    allowed = set(visible_models(services.config, caller.principal))
    models = [model_info(m) for m in services.config.models if m.name in allowed]
    return JSON({"models": models})
