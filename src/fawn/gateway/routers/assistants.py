"""The built-in assistant ``lead_agent``: the reads the SDK needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from langgraph.pregel import Pregel
from pydantic import Field

from fawn.agent.graph import LEAD_AGENT
from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import (
    LEAD_AGENT_ID,
    AssistantCount,
    AssistantSearch,
    AssistantVersions,
)
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


async def _visible(caller: Caller, action: str, value: dict[str, Any]) -> bool:
    """Whether the caller's authorization (a LangGraph ``Auth`` handler's filters on the
    assistant's metadata) lets them see the built-in assistant."""
    scope = await caller.scope("assistants", action, value)
    metadata = assistant_json()["metadata"]
    return all(json_contains(metadata, document) for document in scope.metadata)


async def _require(assistant_id: str, caller: Caller) -> None:
    known = resolve_assistant(assistant_id) is not None
    if not known or not await _visible(caller, "read", {"assistant_id": assistant_id}):
        raise NotFound(f"assistant {assistant_id} not found")


def _search_value(body: AssistantSearch | AssistantCount) -> dict[str, Any]:
    value: dict[str, Any] = {"graph_id": body.graph_id, "metadata": dict(body.metadata or {})}
    if isinstance(body, AssistantSearch):
        value.update(limit=body.limit, offset=body.offset)
    return value


@router.post("/assistants/search")
async def search_assistants(body: AssistantSearch, caller: CallerDep) -> Response:
    matches = _matches(body.metadata, body.graph_id, body.name)
    visible = await _visible(caller, "search", _search_value(body))
    found = [assistant_json()] if matches and visible else []
    page = found[body.offset : body.offset + body.limit]
    if body.select:
        page = [{k: a.get(k) for k in body.select} for a in page]
    headers = {"X-Pagination-Total": str(len(found))}
    if body.offset + len(page) < len(found):
        headers["X-Pagination-Next"] = str(body.offset + len(page))
    return JSON(page, headers=headers)


@router.post("/assistants/count")
async def count_assistants(body: AssistantCount, caller: CallerDep) -> Response:
    matches = _matches(body.metadata, body.graph_id, body.name)
    visible = await _visible(caller, "search", _search_value(body))
    return JSON(1 if matches and visible else 0)


@router.get("/assistants/{assistant_id}")
async def get_assistant(assistant_id: str, caller: CallerDep) -> Response:
    await _require(assistant_id, caller)
    return JSON(assistant_json())


@router.post("/assistants/{assistant_id}/versions")
async def assistant_versions(
    assistant_id: str, body: AssistantVersions, caller: CallerDep
) -> Response:
    """The built-in assistant has one version (it is not edited through the API)."""
    await _require(assistant_id, caller)
    found = [assistant_json()] if _matches(body.metadata, None, None) else []
    return JSON(found[body.offset : body.offset + body.limit])


#: Deeper than any graph fawn builds (the lead agent's sub-agents are one level down).
MAX_XRAY_DEPTH = 64


@router.get("/assistants/{assistant_id}/graph")
async def get_graph(
    assistant_id: str,
    services: ServicesDep,
    caller: CallerDep,
    xray: Annotated[
        bool | Annotated[int, Field(ge=0, le=MAX_XRAY_DEPTH)],
        Query(description="include subgraphs (true), or up to this depth (int)"),
    ] = False,
) -> Response:
    await _require(assistant_id, caller)
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
async def get_schemas(assistant_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    await _require(assistant_id, caller)
    return JSON(_graph_schemas(services.agent.graph))


@router.get("/assistants/{assistant_id}/subgraphs")
@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
async def get_subgraphs(
    assistant_id: str,
    services: ServicesDep,
    caller: CallerDep,
    namespace: str | None = None,
    recurse: bool = False,
) -> Response:
    await _require(assistant_id, caller)
    found = {
        ns: _graph_schemas(graph)
        async for ns, graph in services.agent.graph.aget_subgraphs(
            namespace=namespace, recurse=recurse
        )
        if isinstance(graph, Pregel)
    }
    return JSON(found)
