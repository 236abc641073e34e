"""A run's evidence: ``GET /api/threads/{thread_id}/runs/{run_id}/events`` (its journal)
and ``.../changes`` (what it did to the thread's files, and its delivery receipt)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.wire import changes_json, journal_json

router = APIRouter(tags=["runs"])


@router.get("/api/threads/{thread_id}/runs/{run_id}/events")
async def run_events(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    scope = await caller.scope("threads", "read", {"thread_id": thread_id, "run_id": run_id})
    await services.threads.get(thread_id, scope=scope)
    return JSON(journal_json(await services.runs.journal(thread_id, run_id)))


@router.get("/api/threads/{thread_id}/runs/{run_id}/changes")
async def run_changes(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    """Files the run added, modified and deleted under ``/mnt/user-data/workspace`` and
    ``/mnt/user-data/outputs`` (text diffs, size-limited), and its delivery receipt.
    409 while the run has not finished."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id, "run_id": run_id})
    await services.threads.get(thread_id, scope=scope)
    return JSON(changes_json(await services.changes.of(thread_id, run_id)))
