"""A run's evidence: ``GET /api/threads/{thread_id}/runs/{run_id}/events`` (its journal),
``.../changes`` (what it did to the thread's files, and its delivery receipt) and
``.../workspace-changes`` (the same files in DeerFlow's shape)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from fawn.gateway import deerflow_changes
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.wire import changes_json, journal_json
from fawn.runs.errors import Conflict

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


@router.get("/api/threads/{thread_id}/runs/{run_id}/workspace-changes")
async def run_workspace_changes(
    thread_id: str,
    run_id: str,
    services: ServicesDep,
    caller: CallerDep,
    include_files: bool = True,
    include_diff: bool = True,
) -> Response:
    """The same changes in the shape DeerFlow's web app reads (a status and line counts
    per file, a summary); ``available: false`` while the run has not finished."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id, "run_id": run_id})
    await services.threads.get(thread_id, scope=scope)
    try:
        changes = await services.changes.of(thread_id, run_id)
    except Conflict:
        return JSON(deerflow_changes.empty())
    return JSON(
        deerflow_changes.workspace_changes(
            changes, include_files=include_files, include_diff=include_diff
        )
    )
