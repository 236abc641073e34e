"""``GET /api/threads/{thread_id}/runs/{run_id}/events``: a run's journal."""

from __future__ import annotations

from fastapi import APIRouter, Response

from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.wire import journal_json

router = APIRouter(tags=["runs"])


@router.get("/api/threads/{thread_id}/runs/{run_id}/events")
async def run_events(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id, "run_id": run_id})
    await services.threads.get(thread_id, scope=scope)
    return JSON(journal_json(await services.runs.journal(thread_id, run_id)))
