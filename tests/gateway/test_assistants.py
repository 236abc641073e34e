"""The built-in assistant ``lead_agent``: the reads the SDK needs, through ``client.assistants``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.support.live import LiveServer
from tests.support.problems import problem

# The LangGraph server's namespace for a graph's system assistant id.
LEAD_AGENT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lead_agent"))

ASSISTANT = {
    "assistant_id": LEAD_AGENT_ID,
    "graph_id": "lead_agent",
    "config": {},
    "context": {},
    "created_at": "2026-01-01T00:00:00+00:00",
    "updated_at": "2026-01-01T00:00:00+00:00",
    "metadata": {"created_by": "system"},
    "version": 1,
    "name": "lead_agent",
    "description": "fawn's lead agent: sandboxed tools, uploads, artifacts, clarification",
}

CHANNELS = {
    "messages",
    "sandbox",
    "thread_data",
    "title",
    "artifacts",
    "todos",
    "uploaded_files",
    "viewed_images",
}


@pytest.mark.parametrize("assistant_id", ["lead_agent", LEAD_AGENT_ID])
async def test_get_by_graph_name_or_id(client: LangGraphClient, assistant_id: str) -> None:
    assert await client.assistants.get(assistant_id) == ASSISTANT


@pytest.mark.parametrize(
    "call",
    [
        lambda c, a: c.assistants.get(a),
        lambda c, a: c.assistants.get_graph(a),
        lambda c, a: c.assistants.get_schemas(a),
        lambda c, a: c.assistants.get_subgraphs(a),
    ],
    ids=["get", "get_graph", "get_schemas", "get_subgraphs"],
)
async def test_unknown_assistant_is_404(client: LangGraphClient, call: Any) -> None:
    missing = str(uuid.uuid4())
    with pytest.raises(NotFoundError) as raised:
        await call(client, missing)
    assert raised.value.response.json() == problem(f"assistant {missing} not found", "not_found")


async def test_search(client: LangGraphClient) -> None:
    search = client.assistants.search
    assert await search() == [ASSISTANT]
    assert await search(graph_id="lead_agent", name="lead_agent") == [ASSISTANT]
    assert await search(metadata={"created_by": "system"}) == [ASSISTANT]
    assert await search(sort_by="name", sort_order="asc", limit=5) == [ASSISTANT]
    assert await search(graph_id="other") == []
    assert await search(name="other") == []
    assert await search(metadata={"created_by": "user"}) == []
    assert await search(offset=1) == []
    assert await search(select=["assistant_id", "name"]) == [
        {"assistant_id": LEAD_AGENT_ID, "name": "lead_agent"}
    ]
    assert await search(response_format="object") == {"assistants": [ASSISTANT], "next": None}
    with pytest.raises(UnprocessableEntityError) as raised:
        await search(select=["secret"])  # type: ignore[list-item]
    assert raised.value.response.json()["detail"].startswith("select[0]: Input should be")


async def test_search_pagination_headers(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        page = await http.post("/assistants/search", json={"limit": 1})
        past = await http.post("/assistants/search", json={"offset": 1})
    assert (page.status_code, page.json()) == (200, [ASSISTANT])
    assert page.headers["X-Pagination-Total"] == "1"
    assert "X-Pagination-Next" not in page.headers
    assert (past.status_code, past.json(), past.headers["X-Pagination-Total"]) == (200, [], "1")


async def test_count(client: LangGraphClient) -> None:
    assert await client.assistants.count() == 1
    assert await client.assistants.count(graph_id="lead_agent") == 1
    assert await client.assistants.count(metadata={"created_by": "system"}) == 1
    assert await client.assistants.count(graph_id="other") == 0
    assert await client.assistants.count(name="other") == 0


def _is_drawable_node(node: dict[str, Any]) -> bool:
    """A node of LangGraph's drawable graph JSON (``{"id"}`` alone for ``__end__``)."""
    if node["id"] == "__end__":
        return node == {"id": "__end__"}
    data = node["data"]
    return (
        set(node) <= {"id", "type", "data", "metadata"}
        and node["type"] == "runnable"
        and data["name"] == node["id"]
        and all(isinstance(part, str) for part in data["id"])
    )


@pytest.mark.parametrize("xray", [False, True, 1])
async def test_get_graph(client: LangGraphClient, xray: bool | int) -> None:
    graph = await client.assistants.get_graph("lead_agent", xray=xray)
    assert set(graph) == {"nodes", "edges"}
    node_ids = [n["id"] for n in graph["nodes"]]
    assert all(_is_drawable_node(n) for n in graph["nodes"]), graph["nodes"]
    assert {"__start__", "model", "__end__"} <= set(node_ids)
    for edge in graph["edges"]:
        assert set(edge) <= {"source", "target", "conditional", "data"}
        assert {edge["source"], edge["target"]} <= set(node_ids)
    # One path from the start reaches the model, which can finish.
    sources = {e["source"] for e in graph["edges"]}
    assert "__start__" in sources
    assert any(e["target"] == "__end__" for e in graph["edges"])
    assert graph == await client.assistants.get_graph(LEAD_AGENT_ID, xray=xray)


async def test_get_schemas(client: LangGraphClient) -> None:
    schemas = await client.assistants.get_schemas("lead_agent")
    assert set(schemas) == {
        "graph_id",
        "input_schema",
        "output_schema",
        "state_schema",
        "config_schema",
        "context_schema",
    }
    assert schemas["graph_id"] == "lead_agent"
    for name in ("input_schema", "output_schema", "state_schema"):
        schema = schemas[name]
        assert schema["type"] == "object"
        assert schema["required"] == ["messages"]
        assert set(schema["properties"]) >= CHANNELS
    viewed = schemas["state_schema"]["$defs"]["ViewedImage"]
    assert viewed["properties"] == {
        "mime_type": {"title": "Mime Type", "type": "string"},
        "size": {"title": "Size", "type": "integer"},
    }
    assert viewed["additionalProperties"] is False  # metadata only: never the pixels
    context = schemas["context_schema"]
    assert (context["title"], context["required"]) == ("RunContext", ["thread_id", "run_id"])
    assert {"model_name", "thinking_enabled"} <= set(context["properties"])
    assert schemas["config_schema"]["type"] == "object"
    assert schemas == await client.assistants.get_schemas(LEAD_AGENT_ID)


async def test_get_subgraphs(client: LangGraphClient) -> None:
    assert await client.assistants.get_subgraphs("lead_agent") == {}
    assert await client.assistants.get_subgraphs("lead_agent", recurse=True) == {}
    assert await client.assistants.get_subgraphs(LEAD_AGENT_ID, namespace="tools") == {}
