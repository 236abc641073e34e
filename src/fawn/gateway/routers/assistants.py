"""The built-in assistant ``lead_agent``: the reads the SDK needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from langgraph.pregel import Pregel

from fawn.agent.graph import LEAD_AGENT
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import LEAD_AGENT_ID, AssistantCount, AssistantSearch
from fawn.runs.errors import NotFound
from fawn.store.database import json_contains

router = APIRouter(tags=["assistants"])

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
    if metadata and not json_contains(assistant_json()["metadata"], metadata):
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
    headers = {"X-Pagination-Total": str(len(found))}
    if body.offset + len(page) < len(found):
        headers["X-Pagination-Next"] = str(body.offset + len(page))
    return JSON(page, headers=headers)


@router.post("/assistants/count")
async def count_assistants(body: AssistantCount) -> Response:
    return JSON(1 if _matches(body.metadata, body.graph_id, body.name) else 0)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str) -> Response:
    _require(assistant_id)
    return JSON(assistant_json())


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(
    assistant_id: str,
    services: ServicesDep,
    xray: Annotated[
        int | bool, Query(description="include subgraphs (true), or up to this depth (int)")
    ] = False,
) -> Response:
    _require(assistant_id)
    drawable = (await services.agent.graph.aget_graph(xray=xray)).to_json()
    return JSON(drawable)


def _graph_schemas(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    return {
        "graph_id": LEAD_AGENT,
        "input_schema": graph.get_input_jsonschema(),
        "output_schema": graph.get_output_jsonschema(),
        "state_schema": graph.get_output_jsonschema(),
        "config_schema": graph.config_schema().model_json_schema(),
        "context_schema": graph.get_context_jsonschema(),
    }


@router.get("/assistants/{assistant_id}/schemas")
async def get_schemas(assistant_id: str, services: ServicesDep) -> Response:
    _require(assistant_id)
    return JSON(_graph_schemas(services.agent.graph))


@router.get("/assistants/{assistant_id}/subgraphs")
@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
async def get_subgraphs(
    assistant_id: str, services: ServicesDep, namespace: str | None = None, recurse: bool = False
) -> Response:
    _require(assistant_id)
    found = {
        ns: _graph_schemas(graph)
        async for ns, graph in services.agent.graph.aget_subgraphs(
            namespace=namespace, recurse=recurse
        )
        if isinstance(graph, Pregel)
    }
    return JSON(found)
