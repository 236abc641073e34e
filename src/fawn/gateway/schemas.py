"""Request bodies (pydantic) mirroring what ``langgraph_sdk`` sends. Unknown fields are a 422
naming the field: an option we do not implement is never silently ignored."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

Json = dict[str, Any]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckpointBody(Body):
    thread_id: str | None = None
    checkpoint_ns: str | None = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


# -- threads, state and history ----------------------------------------------------------

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: Deeper documents are refused: the JSON encoder stops at 255 levels, and a thread document
#: nests request values a few levels down.
MAX_JSON_DEPTH = 64


def json_value_problem(value: Any, path: str, depth: int = 0) -> tuple[str, str] | None:
    """``(where, why)`` when ``value`` could not be stored and sent back unchanged on every
    backend, else None.

    PostgreSQL's JSONB refuses NUL characters; the response encoder refuses integers beyond
    64 bits and very deep nesting; NaN and Infinity are not JSON at all (Python's parser
    accepts them).
    """
    if depth > MAX_JSON_DEPTH:
        return path, f"nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in str(key):
                return path, "keys may not contain NUL (\\u0000)"
            problem = json_value_problem(item, f"{path}.{key}", depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = json_value_problem(item, f"{path}[{index}]", depth + 1)
            if problem is not None:
                return problem
        return None
    why = _scalar_problem(value)
    return None if why is None else (path, why)


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str) and "\x00" in value:
        return "strings may not contain NUL (\\u0000)"
    if isinstance(value, int) and not isinstance(value, bool):
        return None if _INT64_MIN <= value <= _INT64_MAX else "integer out of the 64-bit range"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN and Infinity are not JSON numbers"
    return None


class StoredBody(Body):
    """A body whose values end up in a database: each field must survive the round trip."""

    @field_validator("*", mode="before")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        problem = json_value_problem(value, info.field_name or "body")
        if problem is not None:
            where, why = problem
            raise PydanticCustomError(
                "json_unstorable", "{why} (at {where})", {"why": why, "where": where}
            )
        return value


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


class SuperstepUpdate(StoredBody):
    values: Any = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(StoredBody):
    updates: list[SuperstepUpdate] = Field(min_length=1)


class ThreadCreate(StoredBody):
    thread_id: str | None = None
    metadata: Json | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[Superstep] | None = None
    ttl: Ttl = None


class ThreadPatch(StoredBody):
    metadata: Json
    ttl: Ttl = None


class ThreadSearch(StoredBody):
    metadata: Json | None = None
    values: Json | None = None
    ids: list[str] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] = (
        "created_at"
    )
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[ThreadField] | None = None
    extract: dict[str, ExtractPath] | None = Field(default=None, max_length=10)


class ThreadCount(StoredBody):
    metadata: Json | None = None
    values: Json | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


class ThreadPrune(StoredBody):
    thread_ids: list[str]
    strategy: Literal["delete", "keep_latest"] = "delete"


class StateUpdate(StoredBody):
    values: Any = None
    as_node: str | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointBody | None = None


class StateAtCheckpoint(StoredBody):
    checkpoint: CheckpointBody
    subgraphs: bool = False
    select: list[StateField] | None = None


class HistoryQuery(StoredBody):
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
    offset: int = Field(default=0, ge=0)
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
    input: Any = None
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
