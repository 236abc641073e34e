"""`ScriptedChatModel`: an in-process chat model that answers from a script.

It follows the same rules as the test suite's OpenAI stub (``tests/support/openai_stub.py``):
the turn answered is chosen by the number of `AIMessage`s in the input (so it is stateless,
survives graph re-invocations and checkpoint resumes), turns use the format of
`fawn.testing.script`, and streamed answers come word by word, tool calls as
``tool_call_chunks``, so LangGraph's ``stream_mode="messages"`` sees real tokens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import orjson
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, UsageMetadata
from langchain_core.messages.tool import tool_call, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from fawn.testing.script import (
    ScriptedToolCall,
    Turn,
    TurnSpec,
    as_turn,
    count_tokens,
    split_words,
    turn_at,
)

# Tool-call arguments stream in fragments of this many characters.
_ARGUMENT_FRAGMENT = 12


class ScriptedModelError(RuntimeError):
    """Raised for a turn scripted with ``error``; carries the scripted HTTP-like fields."""

    def __init__(self, *, status: int, message: str, code: str | None = None) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.code = code
        self.retryable = status == 429 or status >= 500


class ScriptedChatModel(BaseChatModel):
    """A chat model whose n-th answer in a conversation is ``turns[n]``.

    ``turns`` accepts `AIMessage`s (their text content and tool calls are used), `TurnSpec`
    dicts, bare strings and `Turn`s. ``bind_tools`` returns the model itself and records the
    bound tool names in ``bound_tool_names``.
    """

    turns: list[Turn]
    model_name: str = "fawn-scripted"
    bound_tool_names: list[str] = Field(default_factory=list)

    def __init__(
        self, turns: Sequence[AIMessage | Turn | TurnSpec | str] = (), **kwargs: Any
    ) -> None:
        if not turns:
            raise ValueError("ScriptedChatModel needs at least one turn")
        super().__init__(turns=[_to_turn(t, i) for i, t in enumerate(turns)], **kwargs)

    @property
    def _llm_type(self) -> str:
        return "fawn-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound_tool_names = [_tool_name(tool) for tool in tools]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn, index = self._turn_for(messages)
        if turn.delay:
            time.sleep(turn.delay)
        _raise_scripted_error(turn)
        return ChatResult(
            generations=[ChatGeneration(message=self._message(turn, index, messages))]
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn, index = self._turn_for(messages)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        _raise_scripted_error(turn)
        return ChatResult(
            generations=[ChatGeneration(message=self._message(turn, index, messages))]
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        turn, index = self._turn_for(messages)
        if turn.delay:
            time.sleep(turn.delay)
        _raise_scripted_error(turn)
        for position, chunk in enumerate(self._chunks(turn, index, messages)):
            if position and turn.chunk_delay:
                time.sleep(turn.chunk_delay)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        turn, index = self._turn_for(messages)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        _raise_scripted_error(turn)
        for position, chunk in enumerate(self._chunks(turn, index, messages)):
            if position and turn.chunk_delay:
                await asyncio.sleep(turn.chunk_delay)
            yield chunk

    def _turn_for(self, messages: Sequence[BaseMessage]) -> tuple[Turn, int]:
        index = sum(isinstance(message, AIMessage) for message in messages)
        return turn_at(self.turns, index), index

    def _message(self, turn: Turn, index: int, messages: Sequence[BaseMessage]) -> AIMessage:
        return AIMessage(
            content=turn.content,
            tool_calls=[
                tool_call(name=call.name, args=call.args, id=call.call_id(index, position))
                for position, call in enumerate(turn.tool_calls)
            ],
            usage_metadata=_usage(turn, messages),
            response_metadata=self._response_metadata(turn),
        )

    def _chunks(
        self, turn: Turn, index: int, messages: Sequence[BaseMessage]
    ) -> list[ChatGenerationChunk]:
        """Content word by word, then each tool call (header, argument fragments), then a
        closing chunk carrying usage and finish reason."""
        chunks = [AIMessageChunk(content=piece) for piece in split_words(turn.content)]
        for position, call in enumerate(turn.tool_calls):
            chunks.extend(_tool_call_chunks(call, call.call_id(index, position), position))
        chunks.append(
            AIMessageChunk(
                content="",
                usage_metadata=_usage(turn, messages),
                response_metadata=self._response_metadata(turn),
                chunk_position="last",
            )
        )
        return [ChatGenerationChunk(message=chunk) for chunk in chunks]

    def _response_metadata(self, turn: Turn) -> dict[str, Any]:
        return {"finish_reason": turn.finish_reason, "model_name": self.model_name}


def _to_turn(raw: AIMessage | Turn | TurnSpec | str, position: int) -> Turn:
    if not isinstance(raw, AIMessage):
        return as_turn(raw, where=f"turns[{position}]")
    return Turn(
        content=raw.text,
        tool_calls=tuple(
            ScriptedToolCall(name=call["name"], args=call["args"], id=call["id"])
            for call in raw.tool_calls
        ),
    )


def _tool_call_chunks(call: ScriptedToolCall, call_id: str, position: int) -> list[AIMessageChunk]:
    arguments = orjson.dumps(call.args).decode()
    header = tool_call_chunk(name=call.name, args="", id=call_id, index=position)
    fragments = [
        tool_call_chunk(args=arguments[i : i + _ARGUMENT_FRAGMENT], index=position)
        for i in range(0, len(arguments), _ARGUMENT_FRAGMENT)
    ]
    return [AIMessageChunk(content="", tool_call_chunks=[chunk]) for chunk in [header, *fragments]]


def _usage(turn: Turn, messages: Sequence[BaseMessage]) -> UsageMetadata:
    input_tokens = sum(count_tokens(message.text) for message in messages)
    output_tokens = count_tokens(turn.content) + sum(
        count_tokens(f"{call.name} {orjson.dumps(call.args).decode()}") for call in turn.tool_calls
    )
    return UsageMetadata(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


def _raise_scripted_error(turn: Turn) -> None:
    if turn.error is not None:
        raise ScriptedModelError(
            status=turn.error.status, message=turn.error.message, code=turn.error.code
        )


def _tool_name(tool: dict[str, Any] | type | Callable[..., Any] | BaseTool) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    schema = convert_to_openai_tool(tool)
    function = schema.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    return str(schema.get("name") or schema.get("type") or "")
