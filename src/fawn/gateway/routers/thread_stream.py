"""``GET /threads/{thread_id}/stream``: follow every run executed on a thread."""

from __future__ import annotations

from typing import Annotated, get_args

from fastapi import APIRouter, Header, Query, Response

from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.sse import (
    ThreadStreamMode,
    parse_thread_cursor,
    parse_thread_modes,
    thread_stream_response,
)

router = APIRouter(tags=["threads"])


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    last_event_id: Annotated[
        str | None, Header(json_schema_extra={"pattern": "^(-1|.+:[0-9]{1,19})?$"})
    ] = None,
    stream_mode: Annotated[
        list[str] | None,
        Query(json_schema_extra={"items": {"enum": list(get_args(ThreadStreamMode))}}),
    ] = None,
) -> Response:
    """Modes (langgraph_sdk's ``ThreadStreamMode``): ``run_modes`` forwards every event of
    every run plus ``run_done`` when one ends; ``lifecycle`` only each run's start
    (``metadata``) and ``run_done``; ``state_update`` the ``values`` events. Event ids are
    ``<run_id>:<event id>``, so ``Last-Event-ID`` resumes across runs."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope)
    modes = parse_thread_modes(stream_mode)
    cursor = parse_thread_cursor(last_event_id)
    items = services.runs.follow_thread(
        thread_id, cursor=cursor, heartbeat_seconds=services.config.streams.heartbeat_seconds
    )
    return thread_stream_response(items, modes=modes, release=services.runs.released)
