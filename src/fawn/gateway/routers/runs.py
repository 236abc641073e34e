"""LangGraph-compatible run routes: create, stream, wait, join, cancel, list, delete."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from starlette.responses import StreamingResponse
from starlette.types import Send

from fawn.agent.errors import AgentError
from fawn.agent.graph import LEAD_AGENT
from fawn.agent.serialize import dumps
from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.auth.errors import AuthError, ServerOwnedField
from fawn.gateway.auth.policy import allowed_tools, check_model
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.runspec import build_spec
from fawn.gateway.schemas import (
    LEAD_AGENT_ID,
    MAX_OFFSET,
    RunBatchItem,
    RunCancelMany,
    RunCreate,
    StatelessRunCreate,
    ThreadRunCreate,
)
from fawn.gateway.services import Services
from fawn.gateway.sse import run_stream_response
from fawn.gateway.wire import result_json, run_json
from fawn.runs.errors import Draining, InvalidInput, NotFound, ServiceError
from fawn.runs.spec import OWNER_KEYS, SUPPORTED_STREAM_MODES, RunSpec, parse_stream_modes
from fawn.store.runs import RunRecord, RunStatus
from fawn.streams.sse import parse_last_event_id

router = APIRouter(tags=["runs"])

KEEPALIVE_SECONDS = 5.0

#: What the LangGraph server writes into a thread's metadata when a run is created on it
#: (one graph, one assistant here, whichever name the run used): LangGraph UIs list a graph's
#: threads by it (Agent Chat UI searches ``{"graph_id": ...}``, or ``{"assistant_id": ...}``).
RUN_STAMP = {"graph_id": LEAD_AGENT, "assistant_id": LEAD_AGENT_ID}


def _validate(services: Services, caller: Caller, body: RunCreate, *, stateless: bool) -> RunSpec:
    """The request as a RunSpec, checked against the server's models and graph, and against
    what the caller may use (``auth.policy``: 403 naming a model the role may not use)."""
    _refuse_owner_keys(caller, body)
    spec = build_spec(body, stateless=stateless)
    check_model(services.config, caller.principal, spec.options.model_name)
    services.runs.check(spec)
    return spec


def _refuse_owner_keys(caller: Caller, body: RunCreate) -> None:
    """With identities, a run's user comes from its credential: a request naming one (in
    metadata, ``context`` or ``config.configurable``) is refused, not silently corrected."""
    if not caller.principal.owner_fields_guarded:
        return
    caller.client_metadata(body.metadata, "metadata")
    configurable = (body.config or {}).get("configurable") or {}
    for where, given in (("context", body.context or {}), ("config.configurable", configurable)):
        named = sorted(OWNER_KEYS & set(given)) if isinstance(given, dict) else []
        if named:
            raise ServerOwnedField(
                f"{where}.{named[0]} is set by the server from the authenticated user; "
                "a client cannot write it"
            )


async def admit_run(
    services: Services, caller: Caller, thread_id: str | None, body: RunCreate
) -> tuple[RunRecord, RunSpec]:
    spec = _validate(services, caller, body, stateless=thread_id is None)
    value = _create_run_value(thread_id, spec, body)
    scope = await caller.scope("threads", "create_run", value)
    spec = replace(
        spec,
        metadata=dict(value.get("metadata") or {}),
        # the authenticated caller; a server without identities has none (as before)
        user_id=caller.principal.user_id if caller.principal.method != "none" else None,
        allowed_tools=allowed_tools(services.config, caller.principal),
    )
    run = await services.runs.admit(
        thread_id,
        spec,
        if_not_exists=body.if_not_exists,
        scope=scope,
        thread_metadata=_new_thread_metadata(caller, value),
        thread_stamp=RUN_STAMP,
    )
    return run, spec


def _create_run_value(thread_id: str | None, spec: RunSpec, body: RunCreate) -> dict[str, Any]:
    """What a LangGraph ``threads.create_run`` handler sees (and may change: metadata)."""
    return {
        "thread_id": thread_id,
        "assistant_id": spec.assistant_id,
        "run_id": None,
        "status": "pending",
        "metadata": dict(spec.metadata),
        "prevent_insert_if_inflight": spec.multitask_strategy == "reject",
        "multitask_strategy": spec.multitask_strategy,
        "if_not_exists": body.if_not_exists,
        "after_seconds": 0,
        "kwargs": spec.kwargs_json(),
        "action": None,
    }


def _new_thread_metadata(caller: Caller, value: dict[str, Any]) -> dict[str, Any]:
    """The metadata of a thread a run creates: the owner (with accounts), or what a LangGraph
    handler stamped on the run (so its filters find the thread afterwards)."""
    if caller.principal.method == "custom":
        return dict(value.get("metadata") or {})
    return caller.stamped({})


async def _reach(
    services: Services, caller: Caller, thread_id: str, verb: str, **value: Any
) -> None:
    """The thread of a run route must be the caller's to reach (else 404, as if missing)."""
    scope = await caller.scope("threads", verb, {"thread_id": thread_id, **value})
    await services.threads.get(thread_id, scope=scope)


def _locations(run: RunRecord) -> dict[str, str]:
    return {"Content-Location": f"/threads/{run.thread_id}/runs/{run.run_id}"}


async def _create(
    services: Services, caller: Caller, thread_id: str | None, body: RunCreate
) -> Response:
    run, _ = await admit_run(services, caller, thread_id, body)
    return JSON(run_json(run), headers=_locations(run))


async def _stream(
    services: Services, caller: Caller, thread_id: str | None, body: RunCreate
) -> Response:
    run, spec = await admit_run(services, caller, thread_id, body)
    manager = services.runs

    def disconnected() -> None:
        if spec.on_disconnect == "cancel":
            manager.cancel_soon(run.run_id, "interrupt")

    return _run_stream(services, run.thread_id, run.run_id, None, disconnected)


def _run_stream(
    services: Services,
    thread_id: str,
    run_id: str,
    after: int | None,
    on_disconnect: Any,
    modes: list[str] | None = None,
) -> Response:
    items = services.runs.follow_run(
        run_id, after=after, heartbeat_seconds=services.config.streams.heartbeat_seconds
    )
    return run_stream_response(
        items,
        thread_id,
        run_id,
        release=lambda: services.runs.released(run_id),
        on_disconnect=on_disconnect,
        modes=modes,
    )


async def _wait(
    services: Services, caller: Caller, thread_id: str | None, body: RunCreate
) -> Response:
    run, spec = await admit_run(services, caller, thread_id, body)
    on_leave = None
    if spec.on_disconnect == "cancel":

        def on_leave() -> None:
            services.runs.cancel_soon(run.run_id, "interrupt")

    headers = {
        **_locations(run),
        "Location": f"/threads/{run.thread_id}/runs/{run.run_id}/join",
    }
    return _FinalBody(
        _final_body(services, run.thread_id, run.run_id, on_leave),
        media_type="application/json",
        headers=headers,
    )


class _Handover(Exception):
    """This worker shuts down before the run ends: the response is cut off mid-body, which
    makes the SDK reconnect to its ``Location`` (the join route) on another worker."""


class _FinalBody(StreamingResponse):
    """The ``wait``/``join`` body; a handover ends it without its last chunk (the
    connection closes as cut off, so the client retries elsewhere)."""

    async def stream_response(self, send: Send) -> None:
        with contextlib.suppress(_Handover):
            await super().stream_response(send)


async def _final_body(
    services: Services, thread_id: str, run_id: str, on_leave: Any = None
) -> AsyncIterator[bytes]:
    """Newlines every few seconds while the run works (JSON ignores them), then the result."""
    finished = False
    try:
        waiter = asyncio.ensure_future(services.runs.result(thread_id, run_id))
        release = asyncio.ensure_future(services.runs.released(run_id))
        try:
            while True:
                done, _ = await asyncio.wait(
                    {waiter, release},
                    timeout=KEEPALIVE_SECONDS,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if waiter in done:
                    break
                if release in done:
                    raise _Handover(run_id)
                yield b"\n"
        finally:
            for task in (waiter, release):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        try:
            result = waiter.result()
        except Draining as exc:
            raise _Handover(run_id) from exc
        finished = True
        yield dumps(result_json(result))
    finally:
        if not finished and on_leave is not None and not services.runs.shutting_down:
            on_leave()


@router.post("/threads/{thread_id}/runs")
async def create_run(
    thread_id: str, body: ThreadRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _create(services, caller, thread_id, body)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    thread_id: str, body: ThreadRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _stream(services, caller, thread_id, body)


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    thread_id: str, body: ThreadRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _wait(services, caller, thread_id, body)


@router.post("/runs")
async def create_stateless(
    body: StatelessRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _create(services, caller, None, body)


@router.post("/runs/stream")
async def stream_stateless(
    body: StatelessRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _stream(services, caller, None, body)


@router.post("/runs/wait")
async def wait_stateless(
    body: StatelessRunCreate, services: ServicesDep, caller: CallerDep
) -> Response:
    return await _wait(services, caller, None, body)


@router.post("/runs/batch")
async def create_batch(
    body: list[RunBatchItem], services: ServicesDep, caller: CallerDep
) -> Response:
    """Background runs, each on its ``thread_id`` or stateless. Every item is validated before
    any run is created, so a refused batch creates nothing."""
    for index, item in enumerate(body):
        try:
            _validate(services, caller, item, stateless=item.thread_id is None)
            if item.thread_id is not None and item.if_not_exists != "create":
                await _reach(services, caller, item.thread_id, "create_run")
        except NotFound as exc:
            raise NotFound(f"[{index}] {exc}") from exc
        except (ServiceError, AgentError, AuthError) as exc:
            raise InvalidInput(f"[{index}] {exc}", field=f"[{index}]") from exc
    runs = []
    for item in body:
        run, _ = await admit_run(services, caller, item.thread_id, item)
        runs.append(run_json(run))
    return JSON(runs)


@router.post("/runs/cancel", status_code=204)
async def cancel_many(
    body: RunCancelMany,
    services: ServicesDep,
    caller: CallerDep,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """Cancel by thread, ids or status: only runs of threads the caller reaches."""
    scope = await caller.scope("threads", "update", {"thread_id": body.thread_id, "action": action})
    await services.runs.cancel_many(
        thread_id=body.thread_id,
        run_ids=body.run_ids,
        status=body.status,
        action=action,
        scope=scope,
    )
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    thread_id: str,
    services: ServicesDep,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    status: RunStatus | None = None,
) -> Response:
    await _reach(services, caller, thread_id, "read")
    runs, total = await services.runs.list_page(
        thread_id, limit=limit, offset=offset, status=status
    )
    headers = {"X-Pagination-Total": str(total)}
    if offset + len(runs) < total:
        headers["X-Pagination-Next"] = str(offset + len(runs))
    return JSON([run_json(r) for r in runs], headers=headers)


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    await _reach(services, caller, thread_id, "read", run_id=run_id)
    return JSON(run_json(await services.runs.get(thread_id, run_id)))


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    await _reach(services, caller, thread_id, "delete", run_id=run_id)
    await services.runs.delete_run(thread_id, run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    thread_id: str, run_id: str, services: ServicesDep, caller: CallerDep
) -> Response:
    await _reach(services, caller, thread_id, "read", run_id=run_id)
    await services.runs.get(thread_id, run_id)
    return _FinalBody(_final_body(services, thread_id, run_id), media_type="application/json")


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    thread_id: str,
    run_id: str,
    services: ServicesDep,
    caller: CallerDep,
    last_event_id: Annotated[
        str | None,
        Header(
            description="resume after this event id; 0, -1 or empty: from the first event",
            json_schema_extra={"pattern": "^(-1|[0-9]{0,18})$"},
        ),
    ] = None,
    cancel_on_disconnect: bool = False,
    stream_mode: Annotated[
        list[str] | None,
        # "" (what the SDK sends for "no choice") means every mode
        Query(json_schema_extra={"items": {"enum": ["", *SUPPORTED_STREAM_MODES]}}),
    ] = None,
) -> Response:
    await _reach(services, caller, thread_id, "read", run_id=run_id)
    run = await services.runs.get(thread_id, run_id)
    after = parse_last_event_id(last_event_id)
    # The SDK sends ``stream_mode=`` (empty) when the caller gave none: that means all modes.
    wanted = [m for m in stream_mode or [] if m]
    modes = parse_stream_modes(wanted) if wanted else None
    if not await services.runs.stream_exists(run_id):
        raise NotFound(
            f"the stream of run {run_id} is no longer retained (status {run.status}); "
            "read the thread state instead"
        )
    manager = services.runs

    def disconnected() -> None:
        if cancel_on_disconnect:
            manager.cancel_soon(run_id, "interrupt")

    return _run_stream(
        services, thread_id, run_id, after, disconnected, list(modes) if modes else None
    )


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    thread_id: str,
    run_id: str,
    services: ServicesDep,
    caller: CallerDep,
    wait: bool = False,
    action: Literal["interrupt", "rollback"] = "interrupt",
) -> Response:
    """202 at once; with ``wait``, 200 once the run has ended, with what ``join`` answers
    (the thread's values after the cancel: kept by ``interrupt``, restored by ``rollback``)."""
    await _reach(services, caller, thread_id, "update", run_id=run_id, action=action)
    await services.runs.cancel_one(thread_id, run_id, action, wait=wait)
    if not wait:
        return Response(status_code=202)
    return JSON(result_json(await services.runs.result(thread_id, run_id)))
