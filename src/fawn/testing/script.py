"""Scripted model turns: the format shared by the OpenAI stub and the in-process fake model.

A *script* is a list of turns. Each turn is what the model says the n-th time it is asked
within one conversation; the n is the number of assistant messages already present in the
request, so a script needs no server-side state and any number of conversations can run it in
parallel. A turn, as JSON::

    {
        "content": "text",                                   # default ""
        "tool_calls": [{"name": "bash", "args": {...}, "id": "optional"}],
        "delay": 0.0,        # seconds before the answer starts
        "chunk_delay": 0.0,  # seconds between streamed chunks
        "error": {"status": 500, "message": "boom", "type": "optional", "code": "optional"},
        "finish_reason": "length",  # default: "tool_calls" with tool calls, else "stop"
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},  # default: counted words
    }

When the turn index is past the end of the script the answer is a plain reply carrying the
last turn's content, or ``"done"`` when the last turn called tools (or had no content), so an
agent loop that keeps asking always terminates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

PAST_END_CONTENT = "done"


class ToolCallSpec(TypedDict):
    """A scripted tool call as written in JSON."""

    name: str
    args: NotRequired[dict[str, Any]]
    id: NotRequired[str]


class ErrorSpec(TypedDict, total=False):
    """A scripted failure as written in JSON."""

    status: int
    message: str
    type: str
    code: str


class UsageSpec(TypedDict):
    """Token counts a turn reports instead of the counted ones."""

    prompt_tokens: int
    completion_tokens: int


class TurnSpec(TypedDict, total=False):
    """A scripted turn as written in JSON (see the module docstring)."""

    content: str
    tool_calls: list[ToolCallSpec]
    delay: float
    chunk_delay: float
    error: ErrorSpec
    finish_reason: str
    usage: UsageSpec


class ScriptError(ValueError):
    """A script does not follow the turn format; ``where`` names the offending field."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptedToolCall:
    """One tool call the model makes; ``id`` is generated from the turn when not given."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def call_id(self, turn_index: int, position: int) -> str:
        """The id this call carries on the wire: the scripted one, else a deterministic one."""
        return self.id if self.id is not None else f"call_{turn_index}_{position}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptedError:
    """A failure answered instead of a message (HTTP status and OpenAI-style error body)."""

    status: int = 500
    message: str = "scripted error"
    type: str | None = None
    code: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Turn:
    """One validated scripted answer."""

    content: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    delay: float = 0.0
    chunk_delay: float = 0.0
    error: ScriptedError | None = None
    #: the scripted finish reason, if any (see `finish_reason`)
    stop: str | None = None
    #: ``(prompt_tokens, completion_tokens)`` reported instead of the counted ones
    usage: tuple[int, int] | None = None

    @property
    def finish_reason(self) -> str:
        if self.stop is not None:
            return self.stop
        return "tool_calls" if self.tool_calls else "stop"


def parse_turns(raw: object) -> tuple[Turn, ...]:
    """Validate a JSON list of turns; raises `ScriptError` naming the bad field."""
    if not isinstance(raw, list) or not raw:
        raise ScriptError("turns", "must be a non-empty list")
    return tuple(as_turn(item, where=f"turns[{i}]") for i, item in enumerate(raw))


def as_turn(raw: object, *, where: str = "turn") -> Turn:
    """Accept a `Turn`, a bare string (content only) or a `TurnSpec`-shaped mapping."""
    if isinstance(raw, Turn):
        return raw
    if isinstance(raw, str):
        return Turn(content=raw)
    if not isinstance(raw, Mapping):
        raise ScriptError(where, "must be an object or a string")
    unknown = set(raw) - set(TurnSpec.__annotations__)
    if unknown:
        raise ScriptError(where, f"unknown fields {sorted(unknown)}")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise ScriptError(f"{where}.content", "must be a string")
    return Turn(
        content=content,
        tool_calls=_tool_calls(raw.get("tool_calls", []), f"{where}.tool_calls"),
        delay=_seconds(raw.get("delay", 0.0), f"{where}.delay"),
        chunk_delay=_seconds(raw.get("chunk_delay", 0.0), f"{where}.chunk_delay"),
        error=_error(raw.get("error"), f"{where}.error"),
        stop=_finish_reason(raw.get("finish_reason"), f"{where}.finish_reason"),
        usage=_usage(raw.get("usage"), f"{where}.usage"),
    )


def turn_at(turns: Sequence[Turn], index: int) -> Turn:
    """The turn answered when ``index`` assistant messages precede the request."""
    if index < len(turns):
        return turns[index]
    last = turns[-1]
    if last.tool_calls or not last.content:
        return Turn(content=PAST_END_CONTENT)
    return Turn(content=last.content)


def split_words(text: str) -> list[str]:
    """Split text into streaming pieces (a word with its trailing whitespace); joins back exactly."""
    return re.findall(r"\S+\s*|\s+", text)


def count_tokens(text: str) -> int:
    """A rough token count: whitespace-separated words."""
    return len(text.split())


def _tool_calls(raw: object, where: str) -> tuple[ScriptedToolCall, ...]:
    if not isinstance(raw, list):
        raise ScriptError(where, "must be a list")
    calls: list[ScriptedToolCall] = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise ScriptError(here, "must be an object")
        name, args, call_id = item.get("name"), item.get("args", {}), item.get("id")
        if not isinstance(name, str) or not name:
            raise ScriptError(f"{here}.name", "must be a non-empty string")
        if not isinstance(args, dict):
            raise ScriptError(f"{here}.args", "must be an object")
        if call_id is not None and not isinstance(call_id, str):
            raise ScriptError(f"{here}.id", "must be a string")
        calls.append(ScriptedToolCall(name=name, args=args, id=call_id))
    return tuple(calls)


def _seconds(raw: object, where: str) -> float:
    # bool is an int subclass; `"delay": true` is a mistake, not one second.
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ScriptError(where, "must be a number of seconds")
    seconds = float(raw)
    if not math.isfinite(seconds) or seconds < 0:
        raise ScriptError(where, "must be a finite number >= 0")
    return seconds


def _finish_reason(raw: object, where: str) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ScriptError(where, "must be a non-empty string")
    return raw


def _usage(raw: object, where: str) -> tuple[int, int] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) != {"prompt_tokens", "completion_tokens"}:
        raise ScriptError(where, "must be {prompt_tokens, completion_tokens}")
    counts = (raw["prompt_tokens"], raw["completion_tokens"])
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
        raise ScriptError(where, "token counts must be integers >= 0")
    return counts


def _error(raw: object, where: str) -> ScriptedError | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ScriptError(where, "must be an object")
    status = raw.get("status", 500)
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise ScriptError(f"{where}.status", "must be an HTTP error status (400-599)")
    message = raw.get("message", "scripted error")
    if not isinstance(message, str):
        raise ScriptError(f"{where}.message", "must be a string")
    kind, code = raw.get("type"), raw.get("code")
    if kind is not None and not isinstance(kind, str):
        raise ScriptError(f"{where}.type", "must be a string")
    if code is not None and not isinstance(code, str):
        raise ScriptError(f"{where}.code", "must be a string")
    return ScriptedError(status=status, message=message, type=kind, code=code)
