"""Request bodies (pydantic) mirroring what ``langgraph_sdk`` sends. Unknown fields are a 422
naming the field: an option we do not implement is never silently ignored."""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from fawn.agent.graph import LEAD_AGENT
from fawn.gateway.messages import LeadAgentInput, Message
from fawn.runs.spec import SUPPORTED_STREAM_MODES

Json = dict[str, Any]

#: The LangGraph server's namespace for system assistant ids: an assistant's id is
#: ``uuid5(namespace, graph_id)``.
_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
LEAD_AGENT_ID = str(uuid.uuid5(_ASSISTANT_NAMESPACE, LEAD_AGENT))

#: The largest page offset (as any JSON number: what every client reads exactly).
MAX_OFFSET = 2**53 - 1


def _integral(value: Any) -> Any:
    """JSON Schema counts 10.0 as an integer: so does the server (strict mode refuses the
    rest: booleans, strings, fractions)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


#: An integer as JSON Schema means it. Bound it with ``Field`` as the field's default
#: (``x: JsonInt = Field(ge=0)``), or use :data:`JsonCount`: ``Annotated[JsonInt, Field(ge=0)]``
#: enforces the bound but documents it under pydantic's own name (``ge``), which no JSON
#: Schema reader knows.
JsonInt = Annotated[int, BeforeValidator(_integral)]

#: A count or position from 0 to 2^53 - 1 (the bounds apply to the ``int`` itself, before the
#: validator wraps it, so the schema states them as ``minimum`` and ``maximum``).
JsonCount = Annotated[int, Field(ge=0, le=MAX_OFFSET), BeforeValidator(_integral)]


class Body(BaseModel):
    # strict: false is not an offset, 0 is not a boolean (the schema says so too)
    model_config = ConfigDict(extra="forbid", strict=True)


class CheckpointBody(Body):
    thread_id: str | None = None
    checkpoint_ns: str | None = ""
    checkpoint_id: str | None = None
    checkpoint_map: dict[str, Any] | None = None


# -- threads, state and history ----------------------------------------------------------
# Values that no backend could store (NUL, lone surrogates, numbers beyond 64 bits, deep
# nesting) never reach these models: the edge refuses them for every body
# (:mod:`fawn.gateway.edge.jsonbody`).


def _refuse(why: str) -> BeforeValidator:
    """For a field the SDK can send that fawn does not implement: only null (or absent) is
    accepted, any value is refused with ``why``."""

    def refuse(value: Any) -> None:
        if value is not None:
            raise PydanticCustomError("unsupported", why)

    return BeforeValidator(refuse)


_NULL_ONLY = WithJsonSchema({"type": "null"})

#: ``ttl`` is part of the SDK's create/update calls; refused with a message saying why.
Ttl = Annotated[
    None, _refuse("thread TTLs are not supported: threads are kept until deleted"), _NULL_ONLY
]

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
StateField = Annotated[
    str,
    AfterValidator(_state_field),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^({'|'.join(STATE_FIELDS)}|values\\.[^.\\u0000]+)$",
        }
    ),
]

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


ExtractPath = Annotated[
    str,
    AfterValidator(_extract_path),
    WithJsonSchema({"type": "string", "maxLength": 256, "pattern": f"^{_EXTRACT_PATH.pattern}$"}),
]


class SuperstepUpdate(Body):
    values: StateValues = None
    command: Annotated[
        None, _refuse("updates with 'command' are not supported; use 'values'"), _NULL_ONLY
    ] = None
    as_node: str


class Superstep(Body):
    updates: list[SuperstepUpdate] = Field(min_length=1)


#: A thread id a client may choose (``validate_thread_id``): a UUID fits.
ThreadId = Annotated[str, WithJsonSchema({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"})]


class ThreadCreate(Body):
    thread_id: ThreadId | None = None
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
    limit: JsonInt = Field(default=10, ge=1, le=1000)
    offset: JsonInt = Field(default=0, ge=0, le=MAX_OFFSET)
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


def _check_state_messages(values: Any) -> Any:
    """``values.messages`` holds messages as a run's ``input.messages`` does (one message
    or a list of them): the same shapes the document states, refused the same way."""
    if not isinstance(values, dict) or "messages" not in values:
        return values
    given = values["messages"]
    for where, message in (
        [(f"messages[{i}]", m) for i, m in enumerate(given)]
        if isinstance(given, list)
        else [("messages", given)]
    ):
        try:
            _MESSAGE.validate_python(message)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"]
            raise PydanticCustomError(
                "state_messages", "{where}: {problem}", {"where": where, "problem": problem}
            ) from None
    return values


_MESSAGE: TypeAdapter[Any] = TypeAdapter(Message)
#: A state update's channel values (their shapes are in the document; see openapi.py).
StateValues = Annotated[Any, AfterValidator(_check_state_messages)]


class StateUpdate(Body):
    values: StateValues = None
    as_node: str | None = None
    checkpoint_id: str | None = None
    checkpoint: CheckpointBody | None = None


class StatePatch(Body):
    """``threads.patch_state``: metadata merged into the latest checkpoint's."""

    metadata: Json


class StateAtCheckpoint(Body):
    checkpoint: CheckpointBody
    subgraphs: bool = False
    select: list[StateField] | None = None


def _filter_keys(value: Json) -> Json:
    bad = [key for key in value if not _FILTER_KEY.fullmatch(key)]
    if bad:
        raise PydanticCustomError(
            "filter_key",
            "filter keys may contain only letters, digits, '_', '.' and '-' (got {key!r})",
            {"key": bad[0][:64]},
        )
    return value


_FILTER_KEY = re.compile(r"[A-Za-z0-9_.-]+")
#: Checkpoint metadata to match: the checkpointers accept only simple keys.
HistoryFilter = Annotated[
    Json,
    AfterValidator(_filter_keys),
    WithJsonSchema(
        {
            "type": "object",
            "propertyNames": {"pattern": f"^{_FILTER_KEY.pattern}$"},
            "additionalProperties": {"$ref": "#/components/schemas/JsonValue"},
        }
    ),
]


class CheckpointConfig(Body):
    """A checkpoint given as a run config (the JS SDK's ``Config``: ``{configurable: {...}}``)."""

    configurable: CheckpointBody


class HistoryQuery(Body):
    limit: JsonInt = Field(default=10, ge=1, le=1000)
    before: str | CheckpointBody | CheckpointConfig | None = None
    metadata: HistoryFilter | None = None
    checkpoint: CheckpointBody | None = None
    select: list[StateField] | None = None


class AssistantSearch(Body):
    metadata: Json | None = None
    graph_id: str | None = None
    name: str | None = None
    limit: JsonInt = Field(default=10, ge=1, le=1000)
    offset: JsonInt = Field(default=0, ge=0, le=MAX_OFFSET)
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


class AssistantVersions(Body):
    metadata: Json | None = None
    limit: JsonInt = Field(default=10, ge=1, le=1000)
    offset: JsonInt = Field(default=0, ge=0, le=MAX_OFFSET)


class AssistantCount(Body):
    metadata: Json | None = None
    graph_id: str | None = None
    name: str | None = None


_STREAM_MODE_SCHEMA = {"type": "string", "enum": list(SUPPORTED_STREAM_MODES)}
#: One mode or several (checked by ``parse_stream_modes``, which names the unsupported ones).
StreamModes = Annotated[
    str | list[str],
    WithJsonSchema(
        {"anyOf": [_STREAM_MODE_SCHEMA, {"type": "array", "items": _STREAM_MODE_SCHEMA}]}
    ),
]

#: The assistants that exist: the lead agent, by graph name or by its LangGraph-style id.
AssistantId = Annotated[
    str, WithJsonSchema({"type": "string", "enum": [LEAD_AGENT, LEAD_AGENT_ID]})
]


_GOTO = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "properties": {
                "node": {"type": "string"},
                "input": {"$ref": "#/components/schemas/JsonValue"},
            },
            "required": ["node"],
        },
    ]
}


class _Send(Body):
    node: str
    input: Any = None


class _Command(Body):
    """The shape ``command_from_json`` can turn into a LangGraph ``Command``."""

    resume: Any = None
    update: (
        dict[str, Any] | list[Annotated[list[Any], Field(min_length=2, max_length=2)]] | None
    ) = None
    goto: str | _Send | list[str | _Send] | None = None

    @field_validator("goto", mode="before")
    @classmethod
    def _goto_shape(cls, value: Any) -> Any:
        def fits(item: Any) -> bool:
            return isinstance(item, str) or (isinstance(item, dict) and "node" in item)

        if value is None or fits(value) or (isinstance(value, list) and all(map(fits, value))):
            return value
        raise PydanticCustomError(
            "goto_shape", "must be a node name, {node, input}, or a list of them"
        )

    @field_validator("update")
    @classmethod
    def _pairs_keyed_by_text(cls, value: Any) -> Any:
        if isinstance(value, list) and not all(isinstance(pair[0], str) for pair in value):
            raise ValueError("update pairs are [channel, value]")
        return value


def _check_command(value: dict[str, Any]) -> dict[str, Any]:
    _Command.model_validate(value)
    return value


#: ``Command``: resume an interrupt, update state, go to nodes (``command_from_json``).
RunCommand = Annotated[
    dict[str, Any],
    AfterValidator(_check_command),
    WithJsonSchema(
        {
            "type": "object",
            "properties": {
                "resume": {"$ref": "#/components/schemas/JsonValue"},
                "update": {
                    "anyOf": [
                        {"$ref": "#/components/schemas/JsonObject"},
                        {
                            "type": "array",
                            "items": {
                                "type": "array",
                                "prefixItems": [
                                    {"type": "string", "pattern": "^[^\\u0000]*$"},
                                    {"$ref": "#/components/schemas/JsonValue"},
                                ],
                                "minItems": 2,
                                "maxItems": 2,
                            },
                        },
                        {"type": "null"},
                    ]
                },
                "goto": {"anyOf": [_GOTO, {"type": "array", "items": _GOTO}, {"type": "null"}]},
            },
            "additionalProperties": False,
        }
    ),
]


#: ``input`` and ``command`` are alternatives (``build_spec`` refuses both).
_INPUT_OR_COMMAND: dict[str, Any] = {
    "not": {
        "required": ["input", "command"],
        "properties": {"input": {"type": "object"}, "command": {"type": "object"}},
    }
}


class RunCreate(Body):
    model_config = ConfigDict(json_schema_extra=_INPUT_OR_COMMAND)

    assistant_id: AssistantId
    input: LeadAgentInput | None = None
    command: RunCommand | None = None
    stream_mode: StreamModes = "values"
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
    webhook: Annotated[None, _refuse("webhooks are not supported"), _NULL_ONLY] = None
    after_seconds: Annotated[
        None, _refuse("delayed runs (after_seconds) are not supported"), _NULL_ONLY
    ] = None
    feedback_keys: Annotated[
        None, _refuse("LangSmith feedback keys are not supported"), _NULL_ONLY
    ] = None
    langsmith_tracer: Annotated[None, _refuse("LangSmith tracing is not supported"), _NULL_ONLY] = (
        None
    )
    strict_resume: Annotated[None, _refuse("strict_resume is not supported"), _NULL_ONLY] = None


_FOR_STATELESS = "on_completion applies to stateless runs only (POST /runs...)"
_FOR_THREADS = "stateless runs cannot start from a checkpoint"


class ThreadRunCreate(RunCreate):
    """A run on a thread (``/threads/{thread_id}/runs...``)."""

    on_completion: Annotated[None, _refuse(_FOR_STATELESS), _NULL_ONLY] = None


class StatelessRunCreate(RunCreate):
    """A run on a temporary thread (``/runs...``)."""

    checkpoint: Annotated[None, _refuse(_FOR_THREADS), _NULL_ONLY] = None
    checkpoint_id: Annotated[None, _refuse(_FOR_THREADS), _NULL_ONLY] = None


class RunBatchItem(RunCreate):
    """One entry of ``POST /runs/batch``: a run on ``thread_id``, or stateless without it."""

    model_config = ConfigDict(
        json_schema_extra={
            **_INPUT_OR_COMMAND,
            "if": {"required": ["thread_id"], "properties": {"thread_id": {"type": "string"}}},
            "then": {"properties": {"on_completion": {"type": "null"}}},
            "else": {
                "properties": {"checkpoint": {"type": "null"}, "checkpoint_id": {"type": "null"}}
            },
        }
    )

    thread_id: ThreadId | None = None
    #: The JS SDK's ``runs.createBatch`` spreads each payload as given (``assistantId``) and
    #: adds ``assistant_id``: the camelCase copy is accepted when it names the same assistant
    #: (by graph name or by id).
    assistantId: AssistantId | None = None

    @model_validator(mode="after")
    def _same_assistant(self) -> RunBatchItem:
        same = {self.assistantId, self.assistant_id} <= {LEAD_AGENT, LEAD_AGENT_ID}
        if self.assistantId is not None and self.assistantId != self.assistant_id and not same:
            raise PydanticCustomError(
                "assistant_mismatch",
                "assistantId ('{given}') and assistant_id ('{named}') name different assistants",
                {"given": self.assistantId, "named": self.assistant_id},
            )
        return self


class RunCancelMany(Body):
    """Which runs to cancel: those of a thread, those listed, or those in a status."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
                for name in ("thread_id", "run_ids", "status")
            ]
        }
    )

    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None
