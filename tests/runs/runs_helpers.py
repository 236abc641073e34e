"""Shared helpers for the run tests: matchers for dynamic values, expected message and state
shapes, scripted turns, and stream collection (SDK and raw SSE)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from langgraph_sdk.client import LangGraphClient

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ISO_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


class Match:
    """Equal to any value the predicate accepts; ``repr`` names what it stands for."""

    def __init__(self, predicate: Callable[[Any], bool], description: str) -> None:
        self._predicate = predicate
        self._description = description

    def __eq__(self, other: object) -> bool:
        return bool(self._predicate(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return self._description


def pattern(regex: str | re.Pattern[str], description: str | None = None) -> Match:
    compiled = re.compile(regex) if isinstance(regex, str) else regex
    return Match(
        lambda v: isinstance(v, str) and compiled.fullmatch(v) is not None,
        description or f"<{compiled.pattern}>",
    )


def instance(*types: type) -> Match:
    return Match(
        lambda v: isinstance(v, types) and not (bool not in types and isinstance(v, bool)),
        f"<{'|'.join(t.__name__ for t in types)}>",
    )


def containing(text: str) -> Match:
    return Match(lambda v: isinstance(v, str) and text in v, f"<str containing {text!r}>")


def superset(expected: dict[str, Any]) -> Match:
    """A dict holding at least these items (for LangChain's open-ended callback metadata)."""
    return Match(
        lambda v: isinstance(v, dict) and all(k in v and v[k] == x for k, x in expected.items()),
        f"<dict ⊇ {expected!r}>",
    )


ANY_UUID = pattern(UUID_RE, "<uuid>")
ANY_ISO = pattern(ISO_RE, "<iso-8601 +00:00>")
ANY_INT = instance(int)
ANY_STR = instance(str)
AI_ID = pattern(r"lc_run--[0-9a-f-]+", "<ai message id>")
USAGE = {
    "input_tokens": ANY_INT,
    "output_tokens": ANY_INT,
    "total_tokens": ANY_INT,
    "input_token_details": {},
    "output_token_details": {},
}


def user(content: str) -> dict[str, Any]:
    """A run input holding one user message."""
    return {"messages": [{"role": "user", "content": content}]}


def human(content: str, msg_id: Any = ANY_UUID) -> dict[str, Any]:
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": msg_id,
    }


def ai(content: str, msg_id: Any = AI_ID) -> dict[str, Any]:
    """A finished AI message as it is stored in state (streamed from the stub)."""
    return {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {
            "finish_reason": "stop",
            "model_name": "stub-model",
            "model_provider": "openai",
        },
        "type": "ai",
        "name": "lead_agent",
        "id": msg_id,
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": USAGE,
    }


def state(*messages: dict[str, Any]) -> dict[str, Any]:
    """The lead agent's full state values holding these messages."""
    return {"messages": list(messages), "artifacts": [], "viewed_images": {}}


def slow_turn(words: int = 30, chunk_delay: float = 0.05) -> dict[str, Any]:
    """A turn that streams ``words`` chunks, ``chunk_delay`` apart."""
    return {"content": slow_text(words), "chunk_delay": chunk_delay}


def slow_text(words: int = 30) -> str:
    return " ".join(f"w{i}" for i in range(words))


@dataclass(frozen=True)
class Event:
    event: str
    data: Any
    id: str | None = None


async def collect(parts: AsyncIterator[Any]) -> list[Event]:
    return [Event(p.event, p.data, p.id) async for p in parts]


def names(events: list[Event]) -> list[str]:
    return [e.event for e in events]


def pairs(events: list[Event]) -> list[tuple[str, Any]]:
    return [(e.event, e.data) for e in events]


def metadata_event(run_id: str, thread_id: str) -> tuple[str, Any]:
    return ("metadata", {"run_id": run_id, "thread_id": thread_id, "attempt": 1})


def end_event(run_id: str, status: str = "success") -> tuple[str, Any]:
    return ("end", {"run_id": run_id, "status": status})


def assert_ids_increasing(events: list[Event]) -> None:
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == sorted(set(ids)), ids
    assert ids == list(range(ids[0], ids[0] + len(ids))), ids


async def new_thread(client: LangGraphClient) -> str:
    thread = await client.threads.create()
    return str(thread["thread_id"])


async def wait_status(
    client: LangGraphClient, thread_id: str, run_id: str, statuses: tuple[str, ...]
) -> dict[str, Any]:
    """Poll the run (a short, bounded loop) until its status is one of ``statuses``."""
    for _ in range(600):
        run = await client.runs.get(thread_id, run_id)
        if run["status"] in statuses:
            return dict(run)
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {statuses}: {run['status']}")


async def wait_streaming(client: LangGraphClient, thread_id: str, run_id: str) -> None:
    """Return once the run's model has started streaming tokens (its modes carry messages)."""
    async for part in client.runs.join_stream(thread_id, run_id):
        if part.event.startswith("messages"):
            return
    raise AssertionError(f"run {run_id} ended before streaming a message")


# -- raw SSE -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One SSE block as written on the wire: fields in order, or a comment."""

    lines: tuple[str, ...]

    @property
    def comment(self) -> bool:
        return all(line.startswith(":") for line in self.lines)

    def field(self, name: str) -> str | None:
        for line in self.lines:
            key, _, value = line.partition(": ")
            if key == name:
                return value
        return None

    @property
    def event(self) -> str | None:
        return self.field("event")

    @property
    def data(self) -> Any:
        raw = self.field("data")
        return None if raw is None else orjson.loads(raw)


async def sse_frames(response: httpx.Response) -> AsyncIterator[Frame]:
    buffer = ""
    async for chunk in response.aiter_text():
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            yield Frame(tuple(block.split("\n")))


def ai_invoked(content: str) -> dict[str, Any]:
    """A finished AI message from a non-streaming model call (no ``messages`` mode asked)."""
    return {
        "content": content,
        "additional_kwargs": {"refusal": None},
        "response_metadata": {
            "token_usage": {
                "completion_tokens": ANY_INT,
                "prompt_tokens": ANY_INT,
                "total_tokens": ANY_INT,
                "completion_tokens_details": None,
                "prompt_tokens_details": None,
            },
            "model_provider": "openai",
            "model_name": "stub-model",
            "system_fingerprint": None,
            "id": pattern(r"chatcmpl-[0-9a-f]+", "<completion id>"),
            "finish_reason": "stop",
            "logprobs": None,
        },
        "type": "ai",
        "name": "lead_agent",
        "id": pattern(r"lc_run--[0-9a-f-]+-0", "<ai message id>"),
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": USAGE,
    }
