"""Reading a Chat Completions request body and choosing the scripted answer for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fawn.testing.script import Turn, count_tokens, turn_at
from tests.support.registry import Script, ScriptRegistry

DEFAULT_REPLY = "stub reply"
DEFAULT_TITLE = "Stub Title"
DEFAULT_MODEL = "stub"


class BadRequest(ValueError):
    """The body is not a Chat Completions request this stub can answer."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatRequest:
    """The parts of a request body that decide the answer and its framing."""

    model: str
    first_user_text: str
    assistant_turns: int
    has_tools: bool
    mentions_title: bool
    prompt_tokens: int
    stream: bool
    include_usage: bool

    @property
    def looks_like_title_request(self) -> bool:
        """A tool-less request that talks about a title (see `tests.support.openai_stub`)."""
        return not self.has_tools and self.mentions_title


@dataclass(frozen=True, kw_only=True, slots=True)
class Reply:
    """The turn to answer, the script it came from and the turn index used for tool-call ids."""

    turn: Turn
    turn_index: int
    script: Script | None


def read_chat_request(body: object) -> ChatRequest:
    """Validate the little of the body the stub relies on; raises `BadRequest`."""
    if not isinstance(body, Mapping):
        raise BadRequest("request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array")
    texts: list[str] = []
    first_user_text: str | None = None
    assistant_turns = 0
    for message in messages:
        if not isinstance(message, Mapping):
            raise BadRequest("each message must be an object")
        text = message_text(message.get("content"))
        texts.append(text)
        role = message.get("role")
        if role == "assistant":
            assistant_turns += 1
        elif role == "user" and first_user_text is None:
            first_user_text = text
    stream_options = body.get("stream_options")
    model = body.get("model")
    return ChatRequest(
        model=model if isinstance(model, str) else DEFAULT_MODEL,
        first_user_text=first_user_text or "",
        assistant_turns=assistant_turns,
        has_tools=bool(body.get("tools")),
        mentions_title=any("title" in text.lower() for text in texts),
        prompt_tokens=sum(count_tokens(text) for text in texts),
        stream=body.get("stream") is True,
        include_usage=isinstance(stream_options, Mapping)
        and stream_options.get("include_usage") is True,
    )


def message_text(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text":
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def choose_reply(registry: ScriptRegistry, request: ChatRequest) -> Reply:
    """Apply the scripting rules of `tests.support.openai_stub` to one request."""
    script = registry.match(request.first_user_text)
    if script is None:
        content = DEFAULT_TITLE if request.looks_like_title_request else DEFAULT_REPLY
        return Reply(turn=Turn(content=content), turn_index=request.assistant_turns, script=None)
    if script.title is not None and request.looks_like_title_request:
        return Reply(
            turn=Turn(content=script.title), turn_index=request.assistant_turns, script=script
        )
    return Reply(
        turn=turn_at(script.turns, request.assistant_turns),
        turn_index=request.assistant_turns,
        script=script,
    )
