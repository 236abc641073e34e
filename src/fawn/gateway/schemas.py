"""Request bodies (pydantic) mirroring what ``langgraph_sdk`` sends. Unknown fields are a 422
naming the field: an option we do not implement is never silently ignored."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
)
from pydantic_core import PydanticCustomError

from fawn.gateway.messages import LeadAgentInput

Json = dict[str, Any]

#: A page offset: databases count rows in 64 bits.
MAX_OFFSET = 2**63 - 1


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckpointBody(Body):
    thread_id: str | None = None
    checkpoint_ns: str | None = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


# -- threads, state and history ----------------------------------------------------------
# Values that no backend could store (NUL, lone surrogates, numbers beyond 64 bits, deep
# nesting) never reach these models: the edge refuses them for every body
# (:mod:`fawn.gateway.edge.jsonbody`).


def _no_ttl(value: Any) -> Any:
    if value is not None:
        raise PydanticCustomError(
            "unsupported", "thread TTLs are not supported: threads are kept until deleted"
        )
    return value


#: ``ttl`` is part of the SDK's create/update calls; refused with a message saying why.
Ttl = Annotated[Any, BeforeValidator(_no_ttl)]

STATE_FIELDS = (
    "values",
    "next",
    "tasks",
    "checkpoint",
    "metadata",
    "created_at",
    "parent_checkpoint",
    "interrupts",
    "checkpoint_id",
    "parent_checkpoint_id",
)


def _state_field(value: str) -> str:
    channel = value.removeprefix("values.")
    if value in STATE_FIELDS or (channel != value and channel and "." not in channel):
        return value
    raise PydanticCustomError(
        "state_field",
        "unknown state field '{field}': use one of {known} or values.<channel>",
        {"field": value, "known": ", ".join(STATE_FIELDS)},
    )


#: One entry of ``select`` on state and history reads (``values.<channel>`` picks one channel).
StateField = Annotated[str, AfterValidator(_state_field)]

ThreadField = Literal[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "config",
    "context",
    "status",
    "values",
    "interrupts",
    "error",
]

#: ``values.messages[-1]``: a thread field, then keys (dots) and list indexes (brackets).
_EXTRACT_PATH = re.compile(r"[A-Za-z_]+(\[-?\d+\])*(\.[^.\[\]]+(\[-?\d+\])*)*")


def _extract_path(value: str) -> str:
    if len(value) <= 256 and _EXTRACT_PATH.fullmatch(value):
        return value
    raise PydanticCustomError(
        "extract_path",
        "invalid path '{path}': a thread field, then .key and [index] parts, "
        "e.g. values.messages[-1]",
        {"path": value[:256]},
    )


ExtractPath = Annotated[str, AfterValidator(_extract_path)]


class SuperstepUpdate(Body):
    values: Any = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(Body):
    updates: list[SuperstepUpdate] = Field(min_length=1)


class ThreadCreate(Body):
    thread_id: str | None = None
    metadata: Json | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[Superstep] | None = None
    ttl: Ttl = None


class ThreadPatch(Body):
    metadata: Json
    ttl: Ttl = None


class ThreadSearch(Body):
    metadata: Json | None = None
    values: Json | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] = (
        "created_at"
    )
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[ThreadField] | None = None
    extract: dict[str, ExtractPath] | None = Field(default=None, max_length=10)


class ThreadCount(Body):
    metadata: Json | None = None
    values: Json | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


class ThreadPrune(Body):
    thread_ids: list[str]
    strategy: Literal["delete", "keep_latest"] = "delete"


class StateUpdate(Body):
    values: Any = None
    as_node: str | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointBody | None = None


class StateAtCheckpoint(Body):
    checkpoint: CheckpointBody
    subgraphs: bool = False
    select: list[StateField] | None = None


class HistoryQuery(Body):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | CheckpointBody | None = None
    metadata: Json | None = None
    checkpoint: CheckpointBody | None = None
    select: list[StateField] | None = None


class AssistantSearch(Body):
    metadata: Json | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: (
        list[
            Literal[
                "assistant_id",
                "graph_id",
                "name",
                "description",
                "config",
                "context",
                "created_at",
                "updated_at",
                "metadata",
                "version",
            ]
        ]
        | None
    ) = None


class AssistantCount(Body):
    metadata: Json | None = None
    graph_id: str | None = None
    name: str | None = None


class RunCreate(Body):
    assistant_id: str
    input: LeadAgentInput | None = None
    command: dict[str, Any] | None = None
    stream_mode: str | list[str] = "values"
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    checkpoint: CheckpointBody | None = None
    checkpoint_id: str | None = None
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = "enqueue"
    if_not_exists: Literal["create", "reject"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] | None = None
    # Accepted by the SDK but not implemented here: refused with a message when set.
    webhook: str | None = None
    after_seconds: int | None = None
    feedback_keys: list[str] | None = None
    langsmith_tracer: dict[str, Any] | None = None
    strict_resume: bool | None = None


class RunBatchItem(RunCreate):
    """One entry of ``POST /runs/batch``: a run on ``thread_id``, or stateless without it."""

    thread_id: str | None = None


class RunCancelMany(Body):
    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None
