"""LangGraph-compatible thread routes: records, state, history, copy, prune."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response

from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.schemas import (
    CheckpointBody,
    HistoryQuery,
    StateAtCheckpoint,
    StateField,
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


@router.post("/threads")
async def create_thread(body: ThreadCreate, services: ServicesDep) -> Response:
    supersteps = [
        [(upd.values, upd.as_node) for upd in step.updates] for step in body.supersteps or ()
    ]
    record = await services.threads.create(
        body.thread_id, body.metadata, body.if_exists, supersteps=supersteps
    )
    return JSON(thread_json(record))


@router.post("/threads/search")
async def search_threads(body: ThreadSearch, services: ServicesDep) -> Response:
    flt = ThreadFilter(metadata=body.metadata, values=body.values, status=body.status, ids=body.ids)
    records, total = await services.threads.search(
        flt,
        limit=body.limit,
        offset=body.offset,
        sort_by=body.sort_by,
        sort_order=body.sort_order,
    )
    headers = {"X-Pagination-Total": str(total)}
    if body.offset + len(records) < total:
        headers["X-Pagination-Next"] = str(body.offset + len(records))
    return JSON(
        [thread_json(r, body.select, extract=body.extract) for r in records], headers=headers
    )


@router.post("/threads/count")
async def count_threads(body: ThreadCount, services: ServicesDep) -> Response:
    flt = ThreadFilter(metadata=body.metadata, values=body.values, status=body.status)
    return JSON(await services.threads.count(flt))


@router.post("/threads/prune")
async def prune_threads(body: ThreadPrune, services: ServicesDep) -> Response:
    pruned = await services.threads.prune(body.thread_ids, body.strategy)
    return JSON({"pruned_count": pruned})


@router.get("/threads/{thread_id}")
async def get_thread(
    thread_id: str,
    services: ServicesDep,
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
    return JSON(thread_json(await services.threads.get(thread_id), include=fields))


@router.patch("/threads/{thread_id}")
async def patch_thread(
    thread_id: str,
    body: ThreadPatch,
    services: ServicesDep,
    prefer: Annotated[str | None, Header()] = None,
) -> Response:
    record = await services.threads.update_metadata(thread_id, body.metadata)
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return JSON(thread_json(record))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(thread_id: str, services: ServicesDep) -> Response:
    await services.runs.delete_thread(thread_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy")
async def copy_thread(thread_id: str, services: ServicesDep) -> Response:
    return JSON(thread_json(await services.threads.copy(thread_id)))


StateSelect = Annotated[list[StateField] | None, Query()]


@router.get("/threads/{thread_id}/state")
async def get_state(
    thread_id: str, services: ServicesDep, subgraphs: bool = False, select: StateSelect = None
) -> Response:
    state = await services.threads.get_state(thread_id, subgraphs=subgraphs)
    return JSON(state_json(state, thread_id, select))


@router.post("/threads/{thread_id}/state/checkpoint")
async def get_state_at(thread_id: str, body: StateAtCheckpoint, services: ServicesDep) -> Response:
    checkpoint = body.checkpoint.model_dump(exclude_none=True)
    state = await services.threads.get_state(thread_id, checkpoint, subgraphs=body.subgraphs)
    return JSON(state_json(state, thread_id, body.select))


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_by_id(
    thread_id: str,
    checkpoint_id: str,
    services: ServicesDep,
    subgraphs: bool = False,
    select: StateSelect = None,
) -> Response:
    state = await services.threads.get_state(
        thread_id, {"checkpoint_id": checkpoint_id}, subgraphs=subgraphs
    )
    return JSON(state_json(state, thread_id, select))


@router.post("/threads/{thread_id}/state")
async def update_state(thread_id: str, body: StateUpdate, services: ServicesDep) -> Response:
    checkpoint: dict[str, Any] | None = None
    if body.checkpoint is not None:
        checkpoint = body.checkpoint.model_dump(exclude_none=True)
    elif body.checkpoint_id:
        checkpoint = {"checkpoint_id": body.checkpoint_id}
    config = await services.runs.update_state(
        thread_id, body.values, as_node=body.as_node, checkpoint=checkpoint
    )
    return JSON(update_state_json(config, thread_id))


@router.post("/threads/{thread_id}/history")
async def history(thread_id: str, body: HistoryQuery, services: ServicesDep) -> Response:
    before: str | dict[str, Any] | None
    if isinstance(body.before, CheckpointBody):
        before = body.before.model_dump(exclude_none=True)
    else:
        before = body.before
    checkpoint = body.checkpoint.model_dump(exclude_none=True) if body.checkpoint else None
    states = await services.threads.history(
        thread_id,
        limit=body.limit,
        before=before,
        metadata=body.metadata,
        checkpoint=checkpoint,
    )
    return JSON([state_json(s, thread_id, body.select) for s in states])


@router.get("/threads/{thread_id}/history")
async def history_get(
    thread_id: str,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    before: str | None = None,
) -> Response:
    states = await services.threads.history(
        thread_id, limit=limit, before=before, metadata=None, checkpoint=None
    )
    return JSON([state_json(s, thread_id) for s in states])
