"""Graph values to JSON: messages as the LangGraph server sends them (``model_dump``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson
from langchain_core.messages import BaseMessage
from langgraph.types import Interrupt, Send
from pydantic import BaseModel

# Dataclasses go through _default too: LangGraph's Interrupt is one, and the wire shows it as
# {value, id} only.
_OPTS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_PASSTHROUGH_DATACLASS


def _default(obj: Any) -> Any:
    if isinstance(obj, BaseMessage):
        return obj.model_dump()
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, Interrupt):
        return {"value": obj.value, "id": obj.id}
    if isinstance(obj, Send):
        return {"node": obj.node, "arg": obj.arg}
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", errors="replace")
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "_asdict"):
        return obj._asdict()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return repr(obj)


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes for any value found in graph state or stream output."""
    return orjson.dumps(obj, default=_default, option=_OPTS)


def encoded(obj: Any) -> orjson.Fragment:
    """``obj`` serialized once, embeddable as is in any later orjson output (stream events
    are encoded here and written to SSE or Redis without being parsed back)."""
    return orjson.Fragment(dumps(obj))


def to_jsonable(obj: Any) -> Any:
    """The same value as plain JSON types (for JSON columns and response bodies)."""
    return orjson.loads(dumps(obj))


def interrupts_json(interrupts: Any) -> list[dict[str, Any]]:
    return [{"value": to_jsonable(i.value), "id": i.id} for i in interrupts or ()]
