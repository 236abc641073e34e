"""The thread-centric protocol over HTTP (``client.threads.stream`` of the JS SDK):
``POST /threads/{thread_id}/commands`` answers one command; ``POST
/threads/{thread_id}/stream/events`` streams the thread's events, filtered by channel.

Commands: ``run.start`` (a run on the thread, created if missing; on an interrupted thread
the input resumes it), ``input.respond`` (resume interrupts by id), ``state.get``,
``state.listCheckpoints``, ``state.fork`` and ``agent.getTree``. Refused, in-band with
``not_supported``: ``input.inject`` (a running graph takes no input here: send it with the
next run) and the ``subscription.*`` commands (over HTTP each event stream is the
subscription). A problem with a command is answered in-band (``{"type": "error", ...}``), as
the protocol wants; identity and reach are the HTTP layer's (401/403/404)."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Response
from pydantic import AfterValidator, Field, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from fawn.agent.errors import AgentError
from fawn.agent.serialize import dumps, to_jsonable
from fawn.gateway.auth.access import Caller
from fawn.gateway.auth.deps import CallerDep
from fawn.gateway.deps import ServicesDep
from fawn.gateway.responses import JSON
from fawn.gateway.routers.runs import admit_run
from fawn.gateway.schemas import Body, JsonCount, JsonInt, ThreadRunCreate
from fawn.gateway.services import Services
from fawn.gateway.sse import ReleasableStream
from fawn.gateway.thread_protocol import (
    CHANNELS,
    GRAPH_NAME,
    RUN_MODES,
    ProtocolTranslator,
    StreamFilter,
    sequence,
    split_sequence,
)
from fawn.runs.errors import NotFound, ServiceError
from fawn.streams.events import Heartbeat
from fawn.streams.sse import HEARTBEAT_FRAME, SSE_HEADERS

router = APIRouter(tags=["threads"])

_CHANNEL_PATTERN = f"^({'|'.join(CHANNELS)}|custom:[^\\u0000]+)$"
_CHANNEL_RE = re.compile(f"({'|'.join(CHANNELS)}|custom:[^\x00]+)")


def _channel(value: str) -> str:
    if not _CHANNEL_RE.fullmatch(value):
        raise PydanticCustomError(
            "channel",
            "unknown channel '{channel}': one of {known}, or custom:<name>",
            {"channel": value[:80], "known": ", ".join(CHANNELS)},
        )
    return value


Channel = Annotated[
    str,
    AfterValidator(_channel),
    WithJsonSchema({"type": "string", "pattern": _CHANNEL_PATTERN}),
]


class ProtocolCommand(Body):
    """One command: its id (echoed in the answer), method and parameters."""

    id: JsonInt = Field(ge=0, le=2**53 - 1)
    method: str
    params: dict[str, Any] = Field(default_factory=dict)


class EventStreamRequest(Body):
    """Which events one stream carries (``since``: after this ``seq``)."""

    channels: list[Channel] = Field(min_length=1)
    namespaces: list[list[str]] | None = None
    depth: JsonCount | None = None
    since: JsonCount | None = None


class CommandFailed(Exception):
    """A command the protocol answers with an error (``code`` from its ``ErrorCode``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@router.post("/threads/{thread_id}/commands")
async def command(
    thread_id: str, body: ProtocolCommand, services: ServicesDep, caller: CallerDep
) -> Response:
    try:
        result = await _run_command(services, caller, thread_id, body.method, body.params)
    except CommandFailed as exc:
        return JSON({"type": "error", "id": body.id, "error": exc.code, "message": str(exc)})
    return JSON({"type": "success", "id": body.id, "result": result})


async def _run_command(
    services: Services, caller: Caller, thread_id: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    if method == "run.start":
        return await _start(services, caller, thread_id, params)
    if method == "input.respond":
        await _respond(services, caller, thread_id, params)
        return {}
    if method == "state.fork":
        return await _fork(services, caller, thread_id, params)
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    thread = await services.threads.get(thread_id, scope=scope)
    if method == "state.get":
        _root_only(params.get("namespace"))
        state = await services.threads.get_state(thread_id, scope=scope)
        values = to_jsonable(state.values or {})
        keys = params.get("keys")
        if isinstance(keys, list):
            values = {k: v for k, v in values.items() if k in keys}
        conf = (state.config or {}).get("configurable", {})
        result: dict[str, Any] = {"values": values}
        if conf.get("checkpoint_id"):
            result["checkpoint"] = {
                "id": conf["checkpoint_id"],
                "ns": conf.get("checkpoint_ns", ""),
            }
        return result
    if method == "state.listCheckpoints":
        _root_only(params.get("namespace"))
        return await _checkpoints(services, thread_id, params, scope)
    if method == "agent.getTree":
        status = {"busy": "running", "interrupted": "interrupted", "error": "failed"}.get(
            thread.status, "completed"
        )
        return {"tree": {"namespace": [], "status": status, "graph_name": GRAPH_NAME}}
    if method == "input.inject":
        raise CommandFailed(
            "not_supported",
            "a running graph takes no injected input here; send the message with the next run",
        )
    if method.startswith("subscription."):
        raise CommandFailed(
            "not_supported",
            "over HTTP each event stream is a subscription: "
            f"POST /threads/{thread_id}/stream/events",
        )
    raise CommandFailed("unknown_command", f"unknown command {method[:80]!r}")


def _root_only(namespace: Any) -> None:
    if namespace not in (None, []):
        raise CommandFailed("no_such_namespace", f"no namespace {namespace!r}: fawn's is []")


async def _admit(
    services: Services, caller: Caller, thread_id: str, request: dict[str, Any]
) -> str:
    request = {
        "stream_mode": RUN_MODES,
        "if_not_exists": "create",
        **{k: v for k, v in request.items() if v is not None},
    }
    try:
        body = ThreadRunCreate.model_validate(request)
        run, _ = await admit_run(services, caller, thread_id, body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CommandFailed("invalid_argument", f"{where}: {first['msg']}") from exc
    except (ServiceError, AgentError) as exc:
        raise CommandFailed("invalid_argument", str(exc)) from exc
    return run.run_id


def _run_options(params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(
        set(params)
        - {
            "assistant_id",
            "input",
            "config",
            "metadata",
            "multitask_strategy",
            "multitaskStrategy",
        }
    )
    if unknown:
        raise CommandFailed("invalid_argument", f"run.start: unsupported param(s) {unknown}")
    return {
        "assistant_id": params.get("assistant_id"),
        "config": params.get("config"),
        "metadata": params.get("metadata"),
        "multitask_strategy": params.get("multitask_strategy"),
    }


async def _start(
    services: Services, caller: Caller, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    """A new run; on an interrupted thread the input is the resume value."""
    options = _run_options(params)
    try:
        scope = await caller.scope("threads", "read", {"thread_id": thread_id})
        thread = await services.threads.get(thread_id, scope=scope)
        interrupted = thread.status == "interrupted"
    except NotFound:
        interrupted = False  # created by the run
    if interrupted:
        options["command"] = {"resume": params.get("input")}
    else:
        options["input"] = params.get("input")
    return {"run_id": await _admit(services, caller, thread_id, options)}


async def _respond(
    services: Services, caller: Caller, thread_id: str, params: dict[str, Any]
) -> None:
    """Resume interrupts by id (one, or several at once), with an optional update/goto."""
    entries = params.get("responses", [params])
    if not isinstance(entries, list) or not entries:
        raise CommandFailed("invalid_argument", "input.respond: give responses")
    resume: dict[str, Any] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("interrupt_id"), str):
            raise CommandFailed("invalid_argument", "input.respond: each needs an interrupt_id")
        _root_only(entry.get("namespace"))
        resume[entry["interrupt_id"]] = entry.get("response")
    state = await services.threads.get_state(
        thread_id, scope=await caller.scope("threads", "read", {"thread_id": thread_id})
    )
    pending = {i.id for task in state.tasks for i in task.interrupts}
    missing = sorted(set(resume) - pending)
    if missing:
        raise CommandFailed("no_such_interrupt", f"no pending interrupt {missing[0]!r}")
    command: dict[str, Any] = {"resume": resume}
    for key in ("update", "goto"):
        if params.get(key) is not None:
            command[key] = params[key]
    await _admit(
        services,
        caller,
        thread_id,
        {
            "assistant_id": GRAPH_NAME,
            "command": command,
            "config": params.get("config"),
            "metadata": params.get("metadata"),
            "if_not_exists": "reject",
        },
    )


async def _fork(
    services: Services, caller: Caller, thread_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    checkpoint_id = params.get("checkpoint_id")
    if not isinstance(checkpoint_id, str):
        raise CommandFailed("invalid_argument", "state.fork: checkpoint_id is required")
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    try:
        await services.threads.get_state(thread_id, {"checkpoint_id": checkpoint_id}, scope=scope)
    except NotFound as exc:
        if "checkpoint" not in str(exc):
            raise
        raise CommandFailed("no_such_checkpoint", str(exc)) from exc
    run_id = await _admit(
        services,
        caller,
        thread_id,
        {
            "assistant_id": GRAPH_NAME,
            "input": params.get("input"),
            "config": params.get("config"),
            "checkpoint_id": checkpoint_id,
            "if_not_exists": "reject",
        },
    )
    return {"run_id": run_id, "thread_id": thread_id}


async def _checkpoints(
    services: Services, thread_id: str, params: Mapping[str, Any], scope: Any
) -> dict[str, Any]:
    limit = params.get("limit", 10)
    before = params.get("before")
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise CommandFailed("invalid_argument", "state.listCheckpoints: limit is 1..1000")
    if before is not None and not isinstance(before, str):
        raise CommandFailed("invalid_argument", "state.listCheckpoints: before is a checkpoint id")
    states = await services.threads.history(
        thread_id, limit=limit, before=before, metadata=None, checkpoint=None, scope=scope
    )
    summaries = []
    for state in states:
        metadata = to_jsonable(state.metadata or {})
        summary: dict[str, Any] = {
            "id": (state.config or {}).get("configurable", {}).get("checkpoint_id"),
            "timestamp": state.created_at,
            "step": metadata.get("step", 0),
            "metadata": metadata,
        }
        writes = metadata.get("writes")
        if isinstance(writes, Mapping) and len(writes) == 1:
            summary["node_name"] = next(iter(writes))
        summaries.append(summary)
    return {"checkpoints": summaries}


@router.post("/threads/{thread_id}/stream/events")
async def stream_events(
    thread_id: str, body: EventStreamRequest, services: ServicesDep, caller: CallerDep
) -> Response:
    """The thread's events from its active run (from that run's start) or from ``since``,
    then every later run's, filtered by ``channels``, until the client leaves."""
    scope = await caller.scope("threads", "read", {"thread_id": thread_id})
    await services.threads.get(thread_id, scope=scope)
    wanted = StreamFilter(
        channels=frozenset(body.channels),
        namespaces=tuple(tuple(ns) for ns in body.namespaces)
        if body.namespaces is not None
        else None,
        depth=body.depth,
    )
    cursor = await _cursor(services, thread_id, body.since)
    items = services.runs.follow_thread(
        thread_id, cursor=cursor, heartbeat_seconds=services.config.streams.heartbeat_seconds
    )
    return ReleasableStream(
        _frames(services, thread_id, items, wanted, body.since),
        release=services.runs.released,
        headers=dict(SSE_HEADERS),
    )


async def _cursor(services: Services, thread_id: str, since: int | None) -> tuple[str, int] | None:
    """Where ``since`` points in the thread's runs (the run's stream, before its event)."""
    if since is None:
        return None
    run_seq, event_id, _ = split_sequence(since)
    runs, _ = await services.runs.list_page(thread_id, limit=1000, offset=0, status=None)
    for run in runs:
        if run.seq == run_seq:
            return run.run_id, max(event_id - 1, 0)
    return None


async def _frames(
    services: Services,
    thread_id: str,
    items: AsyncIterator[Any],
    wanted: StreamFilter,
    since: int | None,
) -> AsyncIterator[bytes]:
    translator = ProtocolTranslator(lambda: int(time.time() * 1000))
    run_seqs: dict[str, int] = {}
    async for item in items:
        if isinstance(item, Heartbeat):
            yield HEARTBEAT_FRAME
            continue
        run_id = item.run_id
        if run_id not in run_seqs:
            run_seqs[run_id] = (await services.runs.get(thread_id, run_id)).seq
        event_id = getattr(item.item, "id", None) or 0
        for part, (method, data) in enumerate(translator.translate(run_id, item.item)):
            seq = sequence(run_seqs[run_id], event_id, min(part, 255))
            if since is not None and seq <= since:
                continue
            event = translator.envelope(
                method, data, seq=seq, event_id=f"{run_id}:{event_id}:{part}"
            )
            if wanted.wants(event):
                yield _frame(event)


def _frame(event: dict[str, Any]) -> bytes:
    return (
        b"event: "
        + str(event["method"]).encode()
        + b"\ndata: "
        + dumps(event)
        + b"\nid: "
        + str(event["event_id"]).encode()
        + b"\n\n"
    )
