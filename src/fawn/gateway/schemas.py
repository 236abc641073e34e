"""Request bodies (pydantic) mirroring what ``langgraph_sdk`` sends. Unknown fields are a 422
naming the field: an option we do not implement is never silently ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Json = dict[str, Any]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckpointBody(Body):
    thread_id: str | None = None
    checkpoint_ns: str | None = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


class SuperstepUpdate(Body):
    values: Any = None
    command: dict[str, Any] | None = None
    as_node: str


class Superstep(Body):
    updates: list[SuperstepUpdate]


class ThreadCreate(Body):
    thread_id: str | None = None
    metadata: Json | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    supersteps: list[Superstep] | None = None


class ThreadPatch(Body):
    metadata: Json


class ThreadSearch(Body):
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
    select: list[
        Literal[
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
    ] | None = None


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


class HistoryQuery(Body):
    limit: int = Field(default=10, ge=1, le=1000)
    before: str | CheckpointBody | None = None
    metadata: Json | None = None
    checkpoint: CheckpointBody | None = None


class AssistantSearch(Body):
    metadata: Json | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    sort_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"] | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[str] | None = None


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
