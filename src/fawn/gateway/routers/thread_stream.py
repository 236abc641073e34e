"""``GET /threads/{thread_id}/stream``: follow every run executed on a thread."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from fawn.gateway.deps import ServicesDep
from fawn.gateway.sse import thread_stream_response
from fawn.runs.thread_stream import parse_cursor, parse_modes

router = APIRouter(tags=["threads"])


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    thread_id: str,
    services: ServicesDep,
    last_event_id: Annotated[str | None, Header()] = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
) -> Response:
    await services.threads.get(thread_id)
    modes = parse_modes(stream_mode)
    cursor = parse_cursor(last_event_id)
    return thread_stream_response(
        services.runs.follow_thread(
            thread_id,
            modes=modes,
            cursor=cursor,
            heartbeat_seconds=services.config.streams.heartbeat_seconds,
        )
    )
