"""The built-in assistant ``lead_agent``: the reads the SDK needs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Response

from fawn.agent.graph import LEAD_AGENT
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import AssistantCount, AssistantSearch
from fawn.runs.errors import NotFound

router = APIRouter(tags=["assistants"])

# The LangGraph server's namespace for system assistant ids.
_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
LEAD_AGENT_ID = str(uuid.uuid5(_ASSISTANT_NAMESPACE, LEAD_AGENT))
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def resolve_assistant(assistant_id: str) -> str | None:
    """The graph id for an assistant id or graph name; None when unknown."""
    return LEAD_AGENT if assistant_id in (LEAD_AGENT, LEAD_AGENT_ID) else None


def assistant_json() -> dict[str, Any]:
    return {
        "assistant_id": LEAD_AGENT_ID,
        "graph_id": LEAD_AGENT,
        "config": {},
        "context": {},
        "created_at": _EPOCH,
        "updated_at": _EPOCH,
        "metadata": {"created_by": "system"},
        "version": 1,
        "name": LEAD_AGENT,
        "description": "fawn's lead agent: sandboxed tools, uploads, artifacts, clarification",
    }


def _matches(metadata: dict[str, Any] | None, graph_id: str | None, name: str | None) -> bool:
    meta = assistant_json()["metadata"]
    if metadata and any(meta.get(k) != v for k, v in metadata.items()):
        return False
    return graph_id in (None, LEAD_AGENT) and name in (None, LEAD_AGENT)


def _require(assistant_id: str) -> None:
    if resolve_assistant(assistant_id) is None:
        raise NotFound(f"assistant {assistant_id} not found")


@router.post("/assistants/search")
async def search_assistants(body: AssistantSearch) -> Response:
    found = [assistant_json()] if _matches(body.metadata, body.graph_id, body.name) else []
    page = found[body.offset : body.offset + body.limit]
    if body.select:
        page = [{k: a.get(k) for k in body.select} for a in page]
    return JSON(page, headers={"X-Pagination-Total": str(len(found))})


@router.post("/assistants/count")
async def count_assistants(body: AssistantCount) -> Response:
    return JSON(1 if _matches(body.metadata, body.graph_id, body.name) else 0)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str) -> Response:
    _require(assistant_id)
    return JSON(assistant_json())


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(assistant_id: str, services: ServicesDep, xray: bool = False) -> Response:
    _require(assistant_id)
    drawable = (await services.agent.graph.aget_graph(xray=xray)).to_json()
    return JSON(drawable)


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, services: ServicesDep) -> Response:
    _require(assistant_id)
    graph = services.agent.graph
    return JSON(
        {
            "graph_id": LEAD_AGENT,
            "input_schema": graph.get_input_jsonschema(),
            "output_schema": graph.get_output_jsonschema(),
            "state_schema": graph.get_output_jsonschema(),
            "config_schema": graph.config_schema().model_json_schema(),
            "context_schema": graph.get_context_jsonschema(),
        }
    )


@router.get("/assistants/{assistant_id}/subgraphs")
async def get_subgraphs(assistant_id: str) -> Response:
    _require(assistant_id)
    return JSON({})
