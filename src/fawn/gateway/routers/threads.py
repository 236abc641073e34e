"""LangGraph-compatible thread routes: records, state, history, copy, prune."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response

from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import (
    CheckpointBody,
    CheckpointConfig,
    HistoryQuery,
    StateAtCheckpoint,
    StateField,
    StatePatch,
    StateUpdate,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadPrune,
    ThreadSearch,
)
from fawn.gateway.wire import state_json, thread_json, update_state_json
from fawn.runs.errors import InvalidInput
from fawn.store.threads import ThreadFilter

router = APIRouter(tags=["threads"])


def _search_value(body: ThreadSearch | ThreadCount) -> dict[str, Any]:
    """What a LangGraph ``threads.search`` handler sees of a search or count."""
    value: dict[str, Any] = {
        "metadata": dict(body.metadata or {}),
        "values": dict(body.values or {}),
        "status": body.status,
    }
    if isinstance(body, ThreadSearch):
        value.update(limit=body.limit, offset=body.offset, ids=body.ids)
    return value


@router.post("/threads")
async def create_thread(body: ThreadCreate, services: ServicesDep, caller: CallerDep) -> Response:
    value: dict[str, Any] = {
        "thread_id": body.thread_id,
        "metadata": caller.client_metadata(body.metadata, "metadata"),
        "if_exists": body.if_exists,
    }
    scope = await caller.scope("threads", "create", value)
    supersteps = [
        [(upd.values, upd.as_node) for upd in step.updates] for step in body.supersteps or ()
    ]
    record = await services.threads.create(
        body.thread_id,
        caller.stamped(value["metadata"]),
        body.if_exists,
        supersteps=supersteps,
        scope=scope,
    )
    return JSON(thread_json(record))


@router.post("/threads/search")
async def search_threads(body: ThreadSearch, services: ServicesDep, caller: CallerDep) -> Response:
    scope = await caller.scope("threads", "search", _search_value(body))
    flt = ThreadFilter(metadata=body.metadata, values=body.values, status=body.status, ids=body.ids)
    records, total = await services.threads.search(
        flt,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
        scope=scope,
    )
    headers = {"X-Pagination-Total": str(total)}
    if body.offset + len(records) < total:
        headers["X-Pagination-Next"] = str(body.offset + len(records))
    return JSON(
        [thread_json(r, body.select, extract=body.extract) for r in records], headers=headers
    )


@router.post("/threads/count")
async def count_threads(body: ThreadCount, services: ServicesDep, caller: CallerDep) -> Response:
    scope = await caller.scope("threads", "search", _search_value(body))
    flt = ThreadFilter(metadata=body.metadata, values=body.values, status=body.status)
    return JSON(await services.threads.count(flt, scope=scope))


@router.post("/threads/prune")
async def prune_threads(body: ThreadPrune, services: ServicesDep, caller: CallerDep) -> Response:
    """Only the caller's threads are pruned; others are skipped like unknown ids."""
    scope = await caller.scope("threads", "delete", {"thread_id": None})
    pruned = await services.threads.prune(body.thread_ids, body.strategy, scope=scope)
    return JSON({"pruned_count": pruned})


@router.get("/threads/{thread_id}")
async def get_thread(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    include: Annotated[
        str | None,
        Query(
            description="comma-separated extra fields; 'ttl' (always null here)",
            json_schema_extra={"pattern": "^,*(ttl(,+ttl)*)?,*$"},
        ),
    ] = None,
) -> Response:
    fields = [f for f in (include or "").split(",") if f]
    unknown = sorted(set(fields) - {"ttl"})
    if unknown:
        raise InvalidInput(
            f"include: unknown field(s) {', '.join(unknown)}; supported: ttl", field="include"
        )
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    record = await services.threads.get(thread_id, scope=scope, checkpoints=False)
    return JSON(thread_json(record, include=fields))


@router.patch("/threads/{thread_id}")
async def patch_thread(
    thread_id: str,
    body: ThreadPatch,
    services: ServicesDep,
    caller: CallerDep,
    prefer: Annotated[str | None, Header()] = None,
) -> Response:
    value: dict[str, Any] = {
        "thread_id": thread_id,
        "metadata": caller.client_metadata(body.metadata, "metadata"),
    }
    scope = await caller.scope("threads", "update", value)
    record = await services.threads.update_metadata(thread_id, value["metadata"], scope=scope)
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return JSON(thread_json(record))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    scope = await caller.scope("threads", "delete", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope, checkpoints=False)
    await services.runs.delete_thread(thread_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy")
async def copy_thread(thread_id: str, services: ServicesDep, caller: CallerDep) -> Response:
    """The copy belongs to the caller (who must be able to read the source)."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    source = await services.threads.get(thread_id, scope=scope)
    value: dict[str, Any] = {
        "thread_id": None,
        "metadata": dict(source.metadata),
        "if_exists": "raise",
    }
    await caller.scope("threads", "create", value)
    copy = await services.threads.copy(
        thread_id, scope=scope, metadata=caller.stamped(value["metadata"])
    )
    return JSON(thread_json(copy))


StateSelect = Annotated[list[StateField] | None, Query()]


@router.get("/threads/{thread_id}/state")
async def get_state(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    subgraphs: bool = False,
    select: StateSelect = None,
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    state = await services.threads.get_state(thread_id, subgraphs=subgraphs, scope=scope)
    return JSON(state_json(state, thread_id, select))


@router.post("/threads/{thread_id}/state/checkpoint")
async def get_state_at(
    thread_id: str, body: StateAtCheckpoint, services: ServicesDep, caller: CallerDep
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    checkpoint = body.checkpoint.model_dump(exclude_none=True)
    state = await services.threads.get_state(
        thread_id, checkpoint, subgraphs=body.subgraphs, scope=scope
    )
    return JSON(state_json(state, thread_id, body.select))


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_by_id(
    thread_id: str,
    checkpoint_id: str,
    services: ServicesDep,
    caller: CallerDep,
    subgraphs: bool = False,
    select: StateSelect = None,
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    state = await services.threads.get_state(
        thread_id, {"checkpoint_id": checkpoint_id}, subgraphs=subgraphs, scope=scope
    )
    return JSON(state_json(state, thread_id, select))


@router.post("/threads/{thread_id}/state")
async def update_state(
    thread_id: str, body: StateUpdate, services: ServicesDep, caller: CallerDep
) -> Response:
    scope = await caller.scope("threads", "update", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope)
    checkpoint: dict[str, Any] | None = None
    if body.checkpoint is not None:
        checkpoint = body.checkpoint.model_dump(exclude_none=True)
    elif body.checkpoint_id:
        checkpoint = {"checkpoint_id": body.checkpoint_id}
    config = await services.runs.update_state(
        thread_id, body.values, as_node=body.as_node, checkpoint=checkpoint
    )
    return JSON(update_state_json(config, thread_id))


@router.patch("/threads/{thread_id}/state", status_code=204)
async def patch_state(
    thread_id: str, body: StatePatch, services: ServicesDep, caller: CallerDep
) -> Response:
    """Merge metadata into the newest checkpoint's metadata (the state is unchanged)."""
    scope = await caller.scope("threads", "update", {"thread_id": thread_id})
    await services.threads.patch_checkpoint_metadata(thread_id, body.metadata, scope=scope)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/history")
async def history(
    thread_id: str, body: HistoryQuery, services: ServicesDep, caller: CallerDep
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    before: str | dict[str, Any] | None
    if isinstance(body.before, CheckpointBody):
        before = body.before.model_dump(exclude_none=True)
    elif isinstance(body.before, CheckpointConfig):
        before = body.before.configurable.model_dump(exclude_none=True)
    else:
        before = body.before
    checkpoint = body.checkpoint.model_dump(exclude_none=True) if body.checkpoint else None
    states = await services.threads.history(
        thread_id,
        limit=body.limit,
        before=before,
        metadata=body.metadata,
        checkpoint=checkpoint,
        scope=scope,
    )
    return JSON([state_json(s, thread_id, body.select) for s in states])


@router.get("/threads/{thread_id}/history")
async def history_get(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    before: str | None = None,
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    states = await services.threads.history(
        thread_id, limit=limit, before=before, metadata=None, checkpoint=None, scope=scope
    )
    return JSON([state_json(s, thread_id) for s in states])
