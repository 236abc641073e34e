"""The application routes DeerFlow's web app calls, with its paths and shapes.

What fawn has is answered from fawn's records: a thread (``GET``/``DELETE /api/threads/{id}``),
its messages as history pages, its token usage, its upload limits. What belongs to a
capability fawn does not have yet answers with the shape the app reads as "none" or "off"
(no skills, no custom agents, memory disabled, no scheduled tasks, no channels, no MCP
servers, suggestions off) and refuses writes with ``not_supported`` (404): never a fake
success.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from langchain.agents.middleware.summarization import ContextSize
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from fawn.agent.serialize import to_jsonable
from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.auth.policy import check_model
from fawn.gateway.branches import branch_thread
from fawn.gateway.compaction import compact_context
from fawn.gateway.deps import ServicesDep
from fawn.gateway.input_polish import MAX_CHARS as MAX_DRAFT_CHARS
from fawn.gateway.input_polish import polish
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import MAX_OFFSET
from fawn.gateway.services import Services
from fawn.runs.errors import NotFound, NotSupported
from fawn.store.threads import ThreadRecord

router = APIRouter(tags=["deerflow"])

_AGENTS_OFF = (
    "custom agents are not available: agents_api.enabled is false "
    "(fawn runs its one built-in agent, lead_agent)"
)
#: DeerFlow's memory document, empty (fawn keeps no memory across threads).
_EMPTY_MEMORY: dict[str, Any] = {
    "version": "1.0",
    "lastUpdated": "",
    "user": {
        name: {"summary": "", "updatedAt": ""}
        for name in ("workContext", "personalContext", "topOfMind")
    },
    "history": {
        name: {"summary": "", "updatedAt": ""}
        for name in ("recentMonths", "earlierContext", "longTermBackground")
    },
    "facts": [],
}
_MEMORY_CONFIG: dict[str, Any] = {
    "enabled": False,
    "mode": "middleware",
    "injection_enabled": False,
    "shutdown_flush_timeout_seconds": 0.0,
    "manager_class": "none",
    "backend_config": {},
}


async def _reach(services: Services, caller: Caller, thread_id: str, action: str) -> Any:
    scope = await caller.scope("threads", action, {"thread_id": thread_id})
    return await services.threads.get(thread_id, scope=scope)


# -- capabilities --------------------------------------------------------------------------


@router.get("/api/features")
async def features(caller: CallerDep) -> Response:
    """Which optional features exist: none of DeerFlow's optional ones."""
    del caller  # reachable by any caller the edge lets in
    return JSON(
        {
            "agents_api": {"enabled": False},
            "browser_control": {"enabled": False},
            "mcp_tasks": {"enabled": False},
        }
    )


@router.get("/api/suggestions/config")
async def suggestions_config(caller: CallerDep) -> Response:
    """Follow-up suggestions are off (fawn generates none)."""
    del caller
    return JSON({"enabled": False, "max_suggestions": 0})


@router.get("/api/skills")
async def skills(caller: CallerDep) -> Response:
    """No skills are installed (``/mnt/skills`` is empty)."""
    del caller
    return JSON({"skills": []})


@router.get("/api/skills/{name}")
async def skill(name: str, caller: CallerDep) -> Response:
    del caller
    raise NotFound(f"skill {name[:80]!r} not found: no skills are installed")


@router.post("/api/skills/install")
async def install_skill(caller: CallerDep) -> Response:
    del caller
    raise NotSupported("installing skills is not supported by fawn")


@router.get("/api/channels/providers")
async def channel_providers(caller: CallerDep) -> Response:
    """No IM channels (fawn has no channel integrations)."""
    del caller
    return JSON({"enabled": False, "providers": []})


@router.get("/api/channels/connections")
async def channel_connections(caller: CallerDep) -> Response:
    del caller
    return JSON({"connections": []})


@router.get("/api/agents")
async def agents(caller: CallerDep) -> Response:
    """No custom agents (the built-in lead agent is not one)."""
    del caller
    return JSON({"agents": []})


@router.get("/api/agents/check")
async def check_agent_name(
    caller: CallerDep, name: Annotated[str, Query(max_length=256)] = ""
) -> Response:
    del caller, name
    raise NotSupported(_AGENTS_OFF)


@router.get("/api/agents/{name}")
async def agent(name: str, caller: CallerDep) -> Response:
    del caller
    raise NotFound(f"agent {name[:80]!r} not found: {_AGENTS_OFF}")


@router.get("/api/scheduled-tasks")
async def scheduled_tasks(caller: CallerDep) -> Response:
    """No scheduled tasks (fawn has no scheduler)."""
    del caller
    return JSON([])


@router.get("/api/threads/{thread_id}/scheduled-tasks")
async def thread_scheduled_tasks(
    thread_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    await _reach(services, caller, thread_id, "read")
    return JSON([])


@router.get("/api/memory")
async def memory(caller: CallerDep) -> Response:
    """Memory is disabled: the empty document."""
    del caller
    return JSON(_EMPTY_MEMORY)


@router.get("/api/memory/config")
async def memory_config(caller: CallerDep) -> Response:
    del caller
    return JSON(_MEMORY_CONFIG)


@router.get("/api/memory/status")
async def memory_status(caller: CallerDep) -> Response:
    del caller
    return JSON({"config": _MEMORY_CONFIG, "data": _EMPTY_MEMORY})


_MEMORY_OFF = "memory is disabled: fawn keeps no memory across threads"


@router.api_route("/api/memory", methods=["DELETE"])
@router.api_route("/api/memory/facts", methods=["POST"])
@router.api_route("/api/memory/import", methods=["POST"])
async def memory_write(caller: CallerDep) -> Response:
    del caller
    raise NotSupported(_MEMORY_OFF)


@router.api_route("/api/memory/facts/{fact_id}", methods=["PATCH"])
@router.api_route("/api/memory/facts/{fact_id}", methods=["DELETE"])
async def memory_fact_write(fact_id: str, caller: CallerDep) -> Response:
    del caller, fact_id
    raise NotSupported(_MEMORY_OFF)


@router.get("/api/mcp/config")
async def mcp_config(caller: CallerDep) -> Response:
    """No MCP servers are configured."""
    del caller
    return JSON({"mcp_servers": {}})


@router.put("/api/mcp/config")
async def mcp_config_write(caller: CallerDep) -> Response:
    del caller
    raise NotSupported("MCP servers are not supported by fawn")


@router.api_route("/api/threads/{thread_id}/runs/{run_id}/feedback", methods=["PUT"])
@router.api_route("/api/threads/{thread_id}/runs/{run_id}/feedback", methods=["DELETE"])
async def run_feedback(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    await _reach(services, caller, thread_id, "update")
    await services.runs.get(thread_id, run_id)
    raise NotSupported("run feedback is not stored by fawn")


# -- a thread ------------------------------------------------------------------------------


@router.get("/api/threads/{thread_id}")
async def thread(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    record = await _reach(services, caller, thread_id, "read")
    return JSON(
        {
            **_thread_json(record),
            "values": record.values or {},
            "interrupts": record.interrupts or {},
        }
    )


def _thread_json(record: ThreadRecord) -> dict[str, Any]:
    """A thread as DeerFlow's gateway answers it (without its state)."""
    return {
        "thread_id": record.thread_id,
        "status": record.status,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "metadata": record.metadata,
    }


class ThreadMetadataPatch(BaseModel):
    """DeerFlow's ``PATCH /api/threads/{id}`` body (the app pins a thread with it)."""

    model_config = ConfigDict(extra="forbid")

    metadata: dict[str, Any]


@router.patch("/api/threads/{thread_id}")
async def patch_thread(
    thread_id: str, body: ThreadMetadataPatch, services: ServicesDep, caller: CallerDep
) -> Response:
    """Merge ``metadata`` into the thread's; DeerFlow's answer (no values, no interrupts)."""
    value: dict[str, Any] = {
        "thread_id": thread_id,
        "metadata": caller.client_metadata(body.metadata, "metadata"),
    }
    scope = await caller.scope("threads", "update", value)
    record = await services.threads.update_metadata(thread_id, value["metadata"], scope=scope)
    return JSON(_thread_json(record))


@router.delete("/api/threads/{thread_id}")
async def delete_thread(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    scope = await caller.scope("threads", "delete", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope)
    await services.runs.delete_thread(thread_id)
    return JSON({"success": True, "message": f"Deleted thread {thread_id}"})


@router.get("/api/threads/{thread_id}/messages/page")
async def messages_page(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    before_seq: Annotated[int | None, Query(ge=1, le=MAX_OFFSET)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    """The thread's messages as history rows, newest page first: ``seq`` is the message's
    position in the conversation (from 1), ``run_id`` the run whose checkpoint first held
    it, ``created_at`` that checkpoint's time."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope)
    rows = await _message_rows(services, thread_id, scope)
    end = len(rows) if before_seq is None else min(before_seq - 1, len(rows))
    start = max(end - limit, 0)
    page = rows[start:end]
    has_more = start > 0
    return JSON(
        {
            "data": page,
            "has_more": has_more,
            "next_before_seq": page[0]["seq"] if has_more and page else None,
        }
    )


async def _message_rows(services: Services, thread_id: str, scope: Any) -> list[dict[str, Any]]:
    states = await services.threads.history(
        thread_id, limit=1000, before=None, metadata=None, checkpoint=None, scope=scope
    )
    first_seen: dict[str, tuple[str, Any]] = {}
    for state in reversed(states):  # oldest first
        metadata = state.metadata or {}
        run_id = str(metadata.get("run_id") or "")
        for message in (state.values or {}).get("messages", []) or []:
            msg_id = getattr(message, "id", None)
            if msg_id and msg_id not in first_seen:
                first_seen[msg_id] = (run_id, state.created_at)
    current = (states[0].values or {}).get("messages", []) if states else []
    rows = []
    for seq, message in enumerate(current or [], start=1):
        run_id, created_at = first_seen.get(getattr(message, "id", None) or "", ("", None))
        rows.append(
            {
                "run_id": run_id,
                "seq": seq,
                "content": to_jsonable(message),
                "metadata": {"caller": "lead_agent"},
                "created_at": created_at,
            }
        )
    return rows


@router.get("/api/threads/{thread_id}/token-usage")
async def token_usage(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """Token usage of the thread's runs, as their records counted it, split between the lead
    agent and its sub-agents (the middleware's own model calls, a title or a summary, count
    as the lead agent's: fawn does not tell them apart)."""
    await _reach(services, caller, thread_id, "read")
    runs, _ = await services.runs.list_page(thread_id, limit=1000, offset=0, status=None)
    default_model = services.config.models[0].name if services.config.models else "default"
    by_model: dict[str, dict[str, int]] = {}
    for run in runs:
        model = _model_of(run.kwargs) or default_model
        entry = by_model.setdefault(model, {"tokens": 0, "runs": 0})
        entry["tokens"] += run.usage.total_tokens
        entry["runs"] += 1
    total = sum(r.usage.total_tokens for r in runs)
    split = await services.runs.usage_by_agent(runs)
    subagents = sum(sub for _lead, sub in split.values())
    return JSON(
        {
            "thread_id": thread_id,
            "total_tokens": total,
            "total_input_tokens": sum(r.usage.prompt_tokens for r in runs),
            "total_output_tokens": sum(r.usage.completion_tokens for r in runs),
            "total_runs": len(runs),
            "by_model": by_model,
            "by_caller": {"lead_agent": total - subagents, "subagent": subagents, "middleware": 0},
            "context_usage": None,
        }
    )


def _model_of(kwargs: Mapping[str, Any]) -> str | None:
    for source in (kwargs.get("context"), (kwargs.get("config") or {}).get("configurable")):
        if isinstance(source, Mapping) and isinstance(source.get("model_name"), str):
            return str(source["model_name"])
    return None


class BranchRequest(BaseModel):
    """DeerFlow's ``ThreadBranchRequest``: the turn (its assistant messages) to branch from."""

    model_config = ConfigDict(extra="forbid")

    message_id: str = Field(min_length=1, max_length=256)
    message_ids: list[Annotated[str, Field(max_length=256)]] = Field(
        default_factory=list, max_length=1000
    )
    title: str | None = Field(default=None, max_length=256)


@router.post("/api/threads/{thread_id}/branches")
async def branch(
    thread_id: str, body: BranchRequest, services: ServicesDep, caller: CallerDep
) -> Response:
    """A new thread from one assistant turn of this one (see :mod:`fawn.gateway.branches`)."""
    made = await branch_thread(
        services,
        caller,
        thread_id,
        message_id=body.message_id,
        message_ids=body.message_ids,
        title=body.title,
    )
    return JSON(made.as_json())


# -- the composer --------------------------------------------------------------------------


def _draft(text: str) -> str:
    if len(text) > MAX_DRAFT_CHARS:
        raise PydanticCustomError(
            "draft_too_long", "the draft exceeds {limit} characters", {"limit": MAX_DRAFT_CHARS}
        )
    if not text.strip():
        raise PydanticCustomError("draft_empty", "the draft is empty")
    return text


#: what the document says of a draft: what :func:`_draft` (and the edge) accept: some text
#: that is not only white space, without NUL, at most MAX_DRAFT_CHARS characters
Draft = Annotated[
    str,
    AfterValidator(_draft),
    WithJsonSchema(
        {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_DRAFT_CHARS,
            # no NUL (the edge refuses it in any text), and something besides white space
            "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$",
        }
    ),
]


class InputPolishRequest(BaseModel):
    """DeerFlow's ``InputPolishRequest`` (``thread_id`` only names the draft's thread)."""

    model_config = ConfigDict(extra="forbid")

    text: Draft
    locale: str | None = Field(default=None, max_length=64)
    thread_id: str | None = Field(default=None, max_length=256)


@router.post("/api/input-polish")
async def input_polish(
    body: InputPolishRequest, services: ServicesDep, caller: CallerDep
) -> Response:
    """The draft rewritten by the default model (see :mod:`fawn.gateway.input_polish`)."""
    check_model(services.config, caller.principal, None)
    rewritten, changed = await polish(services.models, body.text, body.locale)
    return JSON({"rewritten_text": rewritten, "changed": changed})


class KeepSize(BaseModel):
    """DeerFlow's ``ContextSize`` for ``keep``: the newest messages, or tokens, to keep."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["messages", "tokens"]
    value: int = Field(ge=1, le=10_000_000)


class CompactRequest(BaseModel):
    """DeerFlow's ``ThreadCompactRequest`` (``agent_name`` names a custom agent: fawn has
    none, so it changes nothing)."""

    model_config = ConfigDict(extra="forbid")

    force: bool = True
    keep: KeepSize | None = None
    agent_name: str | None = Field(default=None, max_length=128)
    model_name: str | None = Field(default=None, max_length=128)


@router.post("/api/threads/{thread_id}/compact")
async def compact_thread(
    thread_id: str, body: CompactRequest, services: ServicesDep, caller: CallerDep
) -> Response:
    """Summarize the thread's older messages now (see :mod:`fawn.gateway.compaction`)."""
    await _reach(services, caller, thread_id, "update")
    model_name = services.config.summarization.model_name or body.model_name
    check_model(services.config, caller.principal, model_name)
    keep: ContextSize | None = None
    if body.keep is not None:
        keep = (
            ("messages", body.keep.value)
            if body.keep.type == "messages"
            else ("tokens", body.keep.value)
        )
    result = await compact_context(
        services, thread_id, model_name=model_name, keep=keep, force=body.force
    )
    return JSON(result)
