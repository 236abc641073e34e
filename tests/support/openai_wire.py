"""OpenAI Chat Completions wire shapes: completion, stream chunks, usage, errors.

The shapes follow what api.openai.com sends, field for field, so the real `openai` client and
`langchain_openai.ChatOpenAI` parse them exactly as they parse the real service.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from fawn.testing.script import ScriptedError, Turn, count_tokens, split_words

SSE_DONE = b"data: [DONE]\n\n"
# Tool-call arguments are streamed in fragments of this many characters, as OpenAI does.
ARGUMENT_FRAGMENT = 12

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Completion:
    """Everything needed to render one scripted answer on the wire."""

    id: str
    created: int
    model: str
    turn: Turn
    turn_index: int
    prompt_tokens: int

    def usage(self) -> dict[str, int]:
        if self.turn.usage is not None:
            prompt, completion = self.turn.usage
            return {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        completion_tokens = count_tokens(self.turn.content) + sum(
            count_tokens(f"{name} {arguments}") for _, name, arguments in self.wire_tool_calls()
        )
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        }

    def wire_tool_calls(self) -> Iterator[tuple[str, str, str]]:
        """(id, name, JSON arguments) of each scripted call."""
        for position, call in enumerate(self.turn.tool_calls):
            arguments = orjson.dumps(call.args).decode()
            yield call.call_id(self.turn_index, position), call.name, arguments


def completion_body(completion: Completion) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": completion.turn.content,
        "refusal": None,
    }
    calls = list(completion.wire_tool_calls())
    if calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in calls
        ]
        # OpenAI sends null, not "", for a tool-calling message without text.
        message["content"] = completion.turn.content or None
    return {
        "id": completion.id,
        "object": "chat.completion",
        "created": completion.created,
        "model": completion.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": completion.turn.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": completion.usage(),
    }


def stream_frames(completion: Completion, *, include_usage: bool) -> list[bytes]:
    """The SSE frames of a streamed answer, ``data: [DONE]`` included."""
    frames = [
        _frame(_chunk(completion, delta, None, include_usage)) for delta in _deltas(completion)
    ]
    frames.append(
        _frame(_chunk(completion, {}, completion.turn.finish_reason, include_usage)),
    )
    if include_usage:
        usage_chunk = _chunk(completion, None, None, include_usage)
        usage_chunk["usage"] = completion.usage()
        frames.append(_frame(usage_chunk))
    frames.append(SSE_DONE)
    return frames


def error_body(error: ScriptedError) -> dict[str, Any]:
    """An OpenAI-style error body."""
    default_type = "server_error" if error.status >= 500 else "invalid_request_error"
    return {
        "error": {
            "message": error.message,
            "type": error.type or _ERROR_TYPES.get(error.status, default_type),
            "param": None,
            "code": error.code,
        }
    }


def _deltas(completion: Completion) -> list[dict[str, Any]]:
    """Content word by word, then each tool call: a header, then argument fragments."""
    deltas: list[dict[str, Any]] = []
    content = completion.turn.content
    if content:
        deltas.append({"role": "assistant", "content": ""})
        deltas.extend({"content": piece} for piece in split_words(content))
    for index, (call_id, name, arguments) in enumerate(completion.wire_tool_calls()):
        header = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        deltas.append({"tool_calls": [header]})
        deltas.extend(
            {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            for fragment in _fragments(arguments)
        )
    if not deltas:
        deltas.append({"role": "assistant", "content": ""})
    elif "role" not in deltas[0]:
        # A tool-call-only answer: OpenAI puts the role on the first tool-call delta.
        deltas[0] = {"role": "assistant", "content": None, **deltas[0]}
    return deltas


def _fragments(text: str) -> list[str]:
    return [text[i : i + ARGUMENT_FRAGMENT] for i in range(0, len(text), ARGUMENT_FRAGMENT)]


def _chunk(
    completion: Completion,
    delta: dict[str, Any] | None,
    finish_reason: str | None,
    include_usage: bool,
) -> dict[str, Any]:
    """A ``chat.completion.chunk``; ``delta=None`` makes the choice-less usage chunk."""
    chunk: dict[str, Any] = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }
    if include_usage:
        # With include_usage OpenAI sends "usage": null on every chunk but the last.
        chunk["usage"] = None
    return chunk


def _frame(chunk: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"
