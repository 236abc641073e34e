"""The OpenAPI document, made true: every error a route can send is declared, with the body
it really has (``{detail, code, retryable}``), and the document is also what the edge and
the 405 answer read to know which operations exist.

FastAPI declares a 422 with its own validation-error shape and nothing else. Here each
operation gets the statuses of the layers it passes (the edge: 400 for an unknown ``Host``,
403 for a cross-site form, 413/415/422 for a body; the services: 404 for a missing thread or
run, 409 for a conflicting state, 503 when the store or stream backend is down), plus the
few that only some routes send (:data:`_ROUTE_ERRORS`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, get_args

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ConfigDict, TypeAdapter
from starlette.routing import compile_path

from fawn.agent.context import ReasoningEffort
from fawn.agent.state import CHANNEL_TYPES, INPUT_NODE, STATE_CHANNELS
from fawn.gateway.auth.paths import AUTH_PREFIX, is_public
from fawn.gateway.messages import Message
from fawn.runs.spec import MAX_CONCURRENT_SUBAGENTS, MODES

#: where the LangGraph API is served a second time, as DeerFlow's gateway serves it (its web
#: app's proxy sends it there); those routes are not in the document
LANGGRAPH_UNDER_API = "/api"


class ErrorBody(BaseModel):
    """Every error response: a message, a stable code, and whether retrying may succeed."""

    model_config = ConfigDict(extra="forbid")

    detail: str
    code: str
    retryable: bool


_DESCRIPTIONS = {
    400: "Bad request: unknown Host, invalid stream cursor, or a model that is not configured",
    401: "Not authenticated (a server with auth on): no valid credential",
    403: "Forbidden: a cross-site request, a missing CSRF token, a path outside the thread's "
    "files, or an action the caller's role or policy does not allow",
    404: "Not found",
    409: "Conflict with the current state",
    413: "Request body or upload too large",
    415: "Unsupported media type: request bodies are JSON",
    416: "Range not satisfiable",
    422: "Invalid request: the message names the field",
    429: "Too many failed sign-in attempts; retry after Retry-After seconds",
    502: "An upstream service failed: the identity provider (sign-in) or the model (input "
    "polish, compaction); retryable",
    503: "A backend (database, stream) is unavailable; retry after Retry-After seconds",
}

_UNSAFE = frozenset({"post", "put", "patch", "delete"})
_STATEFUL_PREFIXES = ("/threads", "/runs", "/api/threads", "/assistants/{assistant_id}/graph")
_THREAD_ROUTES = ("/threads/{thread_id}", "/api/threads/{thread_id}")

#: statuses only some operations send, by ``(method, path template)``
_ROUTE_ERRORS: dict[tuple[str, str], tuple[int, ...]] = {
    ("post", "/threads"): (409,),
    ("delete", "/threads/{thread_id}"): (409,),
    ("post", "/threads/{thread_id}/state"): (409,),
    ("post", "/threads/{thread_id}/runs"): (409,),
    ("post", "/threads/{thread_id}/runs/stream"): (409,),
    ("post", "/threads/{thread_id}/runs/wait"): (409,),
    ("post", "/runs/batch"): (404, 409),
    ("post", "/runs"): (404,),
    ("post", "/runs/stream"): (404,),
    ("post", "/runs/wait"): (404,),
    ("delete", "/threads/{thread_id}/runs/{run_id}"): (409,),
    ("post", "/api/threads/{thread_id}/uploads"): (409,),
    ("get", "/api/threads/{thread_id}/artifacts/{path}"): (403, 416),
    ("get", "/api/threads/{thread_id}/runs/{run_id}/changes"): (409,),
    ("post", "/api/threads/{thread_id}/branches"): (409,),
    ("post", "/api/threads/{thread_id}/compact"): (409, 502),
    ("post", "/api/input-polish"): (502,),
    # DeerFlow's app routes for capabilities fawn does not have: writes are not_supported
    ("post", "/api/skills/install"): (404,),
    ("delete", "/api/memory"): (404,),
    ("post", "/api/memory/facts"): (404,),
    ("post", "/api/memory/import"): (404,),
    ("put", "/api/mcp/config"): (404,),
    ("get", "/api/agents/check"): (404,),
}


def error_responses(method: str, path: str) -> dict[str, Any]:
    """The declared error responses of one operation."""
    statuses = {400, 422, *_ROUTE_ERRORS.get((method, path), ())}
    if method in _UNSAFE:
        statuses |= {403, 413, 415}
    if not is_public(path):
        statuses |= {401, 403}
    if path.startswith(AUTH_PREFIX):
        # 404: the route belongs to another auth.mode than the server's
        statuses |= {404, 409, 429}
        if path.startswith((f"{AUTH_PREFIX}/oauth/", f"{AUTH_PREFIX}/callback/")):
            statuses.add(502)
    if "{" in path:
        statuses.add(404)
    if path.startswith(_THREAD_ROUTES):
        statuses.add(409)  # at least: a thread kept in the other checkpoint mode
    if path.startswith(_STATEFUL_PREFIXES):
        statuses.add(503)
    return {
        str(status): {
            "description": _DESCRIPTIONS[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
        for status in sorted(statuses)
    }


#: Text without NUL, as every string the edge accepts (JSON Schema cannot say "no lone
#: surrogate", but no UTF-8 client can send one by accident).
_TEXT_PATTERN = "^[^\\u0000]*$"
_SAFE_RANGE = {"minimum": -(2**53 - 1), "maximum": 2**53 - 1}
_JSON_VALUE_REF = {"$ref": "#/components/schemas/JsonValue"}
_JSON_OBJECT_REF = {"$ref": "#/components/schemas/JsonObject"}

#: The free-form JSON that fawn stores, as the edge checks it (jsonbody.py).
JSON_SCHEMAS: dict[str, Any] = {
    "JsonValue": {
        "description": "Any JSON value fawn can store: numbers within ±(2^53 - 1), text "
        "without NUL or lone surrogates, nesting at most server.max_json_depth.",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "number", **_SAFE_RANGE},
            {"type": "string", "pattern": _TEXT_PATTERN},
            {"type": "array", "items": _JSON_VALUE_REF},
            _JSON_OBJECT_REF,
        ],
    },
    "JsonObject": {
        "type": "object",
        "additionalProperties": _JSON_VALUE_REF,
        "propertyNames": {"pattern": _TEXT_PATTERN},
    },
}

#: What a thread id can be (``fawn.sandbox.paths.validate_thread_id``): others are 404.
_THREAD_ID = "^[A-Za-z0-9_-]{1,64}$"


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter is absent or a string: ``str | None`` does not make ``null`` a value."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**kept[0], **rest}
    return schema


#: Keys that only describe a schema; what is left decides what it accepts.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})


def _storable(schema: Any) -> Any:
    """``schema`` with free-form JSON and plain strings narrowed to what the edge accepts."""
    if isinstance(schema, list):
        return [_storable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rules = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    notes = {k: v for k, v in schema.items() if k in _ANNOTATIONS}
    if not rules:  # Any
        return {**notes, **_JSON_VALUE_REF}
    if rules == {"type": "object", "additionalProperties": True}:  # dict[str, Any]
        return {**notes, **_JSON_OBJECT_REF}
    narrowed = {k: _storable(v) for k, v in schema.items() if k not in ("default", "examples")}
    narrowed.update({k: v for k, v in notes.items() if k in ("default", "examples")})
    if rules.get("type") == "string" and not rules.keys() & {"pattern", "enum", "const", "format"}:
        narrowed["pattern"] = _TEXT_PATTERN
    if rules.get("type") in ("integer", "number"):
        narrowed = {**_SAFE_RANGE, **narrowed}
    if rules.get("type") == "object" and "propertyNames" not in rules:
        narrowed["propertyNames"] = {"pattern": _TEXT_PATTERN}
    if rules.get("additionalProperties") is True:  # a model taking extra keys
        narrowed["additionalProperties"] = _JSON_VALUE_REF
    return narrowed


def build_document(app: FastAPI) -> dict[str, Any]:
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        routes=app.routes,
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    for name in list(schemas):
        schemas[name] = _storable(schemas[name])
    schemas.update(JSON_SCHEMAS)
    schemas["ErrorBody"] = ErrorBody.model_json_schema()
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _storable(_not_null(parameter.get("schema", {})))
                if parameter.get("in") == "path" and parameter["name"] == "thread_id":
                    parameter["schema"] = {"type": "string", "pattern": _THREAD_ID}
            responses = operation.setdefault("responses", {})
            for status in [s for s in responses if s.startswith(("4", "5"))]:
                del responses[status]
            responses.update(error_responses(method, path))
            responses.update(_SUCCESS.get((method, path), {}))
    _name_nodes(app, schemas)
    _limit_uploads(app, document)
    return document


def _limit_uploads(app: FastAPI, document: dict[str, Any]) -> None:
    """The upload routes take at most ``uploads.max_files`` files a request (422 beyond)."""
    services = getattr(app.state, "services", None)
    if services is None:
        return
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") or {}
            schema = (body.get("content") or {}).get("multipart/form-data", {}).get("schema", {})
            if "files" in schema.get("properties", {}):
                # a copy: the route's declaration is shared by every app in the process
                operation["requestBody"] = body = copy.deepcopy(body)
                files = body["content"]["multipart/form-data"]["schema"]["properties"]["files"]
                files["maxItems"] = services.config.uploads.max_files


_SSE_EVENT = {
    "type": "object",
    "description": "One event: its name, one line of JSON, and its id when resumable",
    "properties": {
        "event": {"type": "string"},
        "data": {"type": "string"},
        "id": {"type": "string"},
    },
    "required": ["data"],
}
_EVENT_STREAM = {
    "200": {
        "description": "Server-sent events",
        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
    }
}
_FILE = {"content": {"*/*": {"schema": {"type": "string", "format": "binary"}}}}

#: Successful answers that are not JSON.
_SUCCESS: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/threads/{thread_id}/runs/stream"): _EVENT_STREAM,
    ("post", "/runs/stream"): _EVENT_STREAM,
    ("get", "/threads/{thread_id}/runs/{run_id}/stream"): _EVENT_STREAM,
    ("get", "/threads/{thread_id}/stream"): _EVENT_STREAM,
    ("post", "/threads/{thread_id}/stream/events"): _EVENT_STREAM,
    ("get", "/api/threads/{thread_id}/artifacts/{path}"): {
        "200": {"description": "The file", **_FILE},
        "206": {"description": "The requested range of the file", **_FILE},
    },
}


def _name_nodes(app: FastAPI, schemas: dict[str, Any]) -> None:
    """What only the running server knows (once its services run): the graph's nodes (for
    ``as_node`` and breakpoints) and the configured models (for the run options)."""
    services = getattr(app.state, "services", None)
    if services is None:
        return
    nodes = {"type": "string", "enum": sorted(services.agent.graph.nodes)}
    # ``__input__``: an update written as the graph's input (LangGraph's bulk update)
    updaters = {"type": "string", "enum": sorted([*services.agent.graph.nodes, INPUT_NODE])}
    models = [m.name for m in services.config.models]
    channels = {
        "type": "object",
        "properties": {name: _channel_schema(name, schemas) for name in sorted(STATE_CHANNELS)},
        "additionalProperties": False,
    }
    for name in ("StateUpdate", "SuperstepUpdate"):
        _narrow(schemas, name, "as_node", updaters)
        _narrow(schemas, name, "values", {"anyOf": [channels, {"type": "null"}]})
    breakpoints = {"anyOf": [{"const": "*"}, {"type": "array", "items": nodes}]}
    options = _run_options(models)
    for name in ("RunCreate", "ThreadRunCreate", "StatelessRunCreate", "RunBatchItem"):
        for field in ("interrupt_before", "interrupt_after"):
            _narrow(schemas, name, field, breakpoints)
        _narrow(schemas, name, "context", {**options, "additionalProperties": False})
        configurable = {**options, "additionalProperties": _JSON_VALUE_REF}
        config = {
            "type": "object",
            "properties": {"configurable": {"anyOf": [configurable, {"type": "null"}]}},
            "additionalProperties": _JSON_VALUE_REF,
        }
        _narrow(schemas, name, "config", config)


def _channel_schema(name: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """What a client may write to channel ``name`` (``validate_update`` checks the same); its
    models join the document's components."""
    adapter = CHANNEL_TYPES.get(name)
    if adapter is None:  # messages: as in a run's input (fawn.gateway.schemas checks it)
        adapter = TypeAdapter(Message | list[Message])
    schema = adapter.json_schema(ref_template="#/components/schemas/{model}")
    for model, definition in schema.pop("$defs", {}).items():
        schemas.setdefault(model, _storable(definition))
    narrowed: dict[str, Any] = _storable(schema)
    return narrowed


def _narrow(schemas: dict[str, Any], model: str, field: str, schema: dict[str, Any]) -> None:
    """Replace ``model.field``'s schema, keeping null when the field allowed it."""
    properties = schemas.get(model, {}).get("properties", {})
    if field not in properties:
        return
    nullable = any(s.get("type") == "null" for s in properties[field].get("anyOf", []))
    properties[field] = {"anyOf": [schema, {"type": "null"}]} if nullable else schema


def _run_options(models: list[str]) -> dict[str, Any]:
    """The lead agent's options in ``context`` or ``config.configurable`` (see
    ``fawn.runs.spec.parse_options``, which enforces the same)."""

    def nullable(schema: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [schema, {"type": "null"}]}

    return {
        "type": "object",
        "properties": {
            "model_name": nullable({"type": "string", "enum": models}),
            "thinking_enabled": nullable({"type": "boolean"}),
            "reasoning_effort": nullable(
                {"type": "string", "enum": list(get_args(ReasoningEffort))}
            ),
            "is_plan_mode": nullable({"type": "boolean"}),
            "subagent_enabled": nullable({"type": "boolean"}),
            "max_concurrent_subagents": nullable(
                {"type": "integer", "minimum": 1, "maximum": MAX_CONCURRENT_SUBAGENTS}
            ),
            "agent_name": nullable({"const": "lead_agent"}),
            # DeerFlow's chat mode: defaults for the options above (see fawn.runs.spec.MODES)
            "mode": nullable({"type": "string", "enum": list(MODES)}),
            # the server sets these itself: a client's values are dropped
            **dict.fromkeys(("thread_id", "run_id", "user_id"), _JSON_VALUE_REF),
            "checkpoint_ns": _JSON_VALUE_REF,
            "checkpoint_map": _JSON_VALUE_REF,
        },
        "propertyNames": {"pattern": _TEXT_PATTERN},
    }


def install_openapi(app: FastAPI) -> None:
    """Serve :func:`build_document` at ``/openapi.json`` (built once, on first use)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    pattern: re.Pattern[str]
    multipart: bool
    #: the body is an HTML form (``application/x-www-form-urlencoded``), as sign-in takes
    form: bool = False


def operations(document: dict[str, Any]) -> list[Operation]:
    """Every operation of ``document``, with a pattern matching its request paths."""
    found = []
    for template, entries in document.get("paths", {}).items():
        pattern = compile_path(template.replace("{path}", "{path:path}"))[0]
        for method, operation in entries.items():
            content = (operation.get("requestBody") or {}).get("content") or {}
            multipart = "multipart/form-data" in content
            form = "application/x-www-form-urlencoded" in content
            found.append(Operation(method.upper(), template, pattern, multipart, form))
    return found


def allowed_methods(found: Iterable[Operation], path: str) -> list[str]:
    """The methods the document declares for ``path`` (for a 405's ``Allow``).

    ``/threads/search`` also fits ``/threads/{thread_id}``: the resource is the most literal
    template that fits.
    """
    matching = [op for op in found if op.pattern.match(path)]
    if not matching:
        return []
    fewest = min(op.template.count("{") for op in matching)
    return sorted({op.method for op in matching if op.template.count("{") == fewest})
