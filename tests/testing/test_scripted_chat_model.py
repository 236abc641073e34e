"""ScriptedChatModel driven through LangChain's own agent loop and runnable interface."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from fawn.testing import ScriptedChatModel, ScriptedModelError, ScriptError

ADD_THEN_ANSWER: list[Any] = [
    {"content": "Adding.", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 40}}]},
    {"content": "The sum is 42."},
]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _shape(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """The deterministic part of a transcript (message ids are random)."""
    shaped: list[dict[str, Any]] = []
    for message in messages:
        entry: dict[str, Any] = {"type": message.type, "content": message.content}
        if isinstance(message, AIMessage):
            entry["tool_calls"] = message.tool_calls
        if isinstance(message, ToolMessage):
            entry |= {"tool_call_id": message.tool_call_id, "name": message.name}
        shaped.append(entry)
    return shaped


EXPECTED_TRANSCRIPT = [
    {"type": "human", "content": "what is 2 + 40?"},
    {
        "type": "ai",
        "content": "Adding.",
        "tool_calls": [
            {"name": "add", "args": {"a": 2, "b": 40}, "id": "call_0_0", "type": "tool_call"}
        ],
    },
    {"type": "tool", "content": "42", "tool_call_id": "call_0_0", "name": "add"},
    {"type": "ai", "content": "The sum is 42.", "tool_calls": []},
]


async def test_runs_a_real_tool_inside_create_agent() -> None:
    model = ScriptedChatModel(ADD_THEN_ANSWER)
    agent = create_agent(model=model, tools=[add])

    result = await agent.ainvoke({"messages": [HumanMessage("what is 2 + 40?")]})

    assert _shape(result["messages"]) == EXPECTED_TRANSCRIPT
    assert model.bound_tool_names == ["add"]
    assert result["messages"][-1].usage_metadata == {
        "input_tokens": 7,  # "what is 2 + 40?", "Adding.", "42"
        "output_tokens": 4,
        "total_tokens": 11,
    }


async def test_streams_tokens_through_langgraph_messages_mode() -> None:
    agent = create_agent(model=ScriptedChatModel(ADD_THEN_ANSWER), tools=[add])
    tokens: list[tuple[str, str]] = []
    tool_chunks: list[Any] = []

    stream: AsyncIterator[Any] = agent.astream(
        {"messages": [HumanMessage("what is 2 + 40?")]}, stream_mode="messages"
    )
    async for message, metadata in stream:
        if isinstance(message, AIMessageChunk):
            if message.content:
                tokens.append((metadata["langgraph_node"], str(message.content)))
            tool_chunks.extend(message.tool_call_chunks)

    assert tokens == [
        ("model", "Adding."),
        ("model", "The "),
        ("model", "sum "),
        ("model", "is "),
        ("model", "42."),
    ]
    assert tool_chunks == [
        {"name": "add", "args": "", "id": "call_0_0", "index": 0, "type": "tool_call_chunk"},
        {"name": None, "args": '{"a":2,"b":4', "id": None, "index": 0, "type": "tool_call_chunk"},
        {"name": None, "args": "0}", "id": None, "index": 0, "type": "tool_call_chunk"},
    ]


async def test_is_stateless_across_checkpointed_invocations() -> None:
    """The turn comes from the conversation, so a resumed thread picks up where it was."""
    script = [*ADD_THEN_ANSWER, {"content": "Still 42."}]
    agent = create_agent(model=ScriptedChatModel(script), tools=[add], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}

    await agent.ainvoke({"messages": [HumanMessage("what is 2 + 40?")]}, config)
    result = await agent.ainvoke({"messages": [HumanMessage("sure?")]}, config)

    assert _shape(result["messages"]) == [
        *EXPECTED_TRANSCRIPT,
        {"type": "human", "content": "sure?"},
        {"type": "ai", "content": "Still 42.", "tool_calls": []},
    ]


def test_sync_invoke_and_stream_agree() -> None:
    model = ScriptedChatModel(["hello there, world"])

    invoked = model.invoke("hi")
    chunks = list(model.stream("hi"))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk

    assert [chunk.content for chunk in chunks] == ["hello ", "there, ", "world", ""]
    assert (invoked.content, merged.content) == ("hello there, world", "hello there, world")
    assert (invoked.response_metadata, merged.response_metadata) == (
        {"finish_reason": "stop", "model_name": "fawn-scripted"},
        {"finish_reason": "stop", "model_name": "fawn-scripted"},
    )


@pytest.mark.parametrize(
    ("history", "answer"),
    [
        ([], "first"),
        ([AIMessage("x")], "second"),
        ([AIMessage("x"), AIMessage("y")], "second"),
    ],
)
async def test_turn_is_the_number_of_ai_messages(history: list[BaseMessage], answer: str) -> None:
    model = ScriptedChatModel([AIMessage("first"), "second"])

    reply = await model.ainvoke([HumanMessage("go"), *history])

    assert reply.content == answer


async def test_past_the_end_of_tool_calls_answers_done() -> None:
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[{"name": "add", "args": {}, "id": "mine"}])]
    )

    first = await model.ainvoke("go")
    again = await model.ainvoke([HumanMessage("go"), first])

    assert (first.tool_calls, again.content) == (
        [{"name": "add", "args": {}, "id": "mine", "type": "tool_call"}],
        "done",
    )


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_error_turns_raise(streaming: bool) -> None:
    model = ScriptedChatModel([{"error": {"status": 503, "message": "overloaded"}}])

    with pytest.raises(ScriptedModelError) as raised:
        if streaming:
            [chunk async for chunk in model.astream("go")]
        else:
            await model.ainvoke("go")

    assert (raised.value.status, raised.value.message, raised.value.retryable) == (
        503,
        "overloaded",
        True,
    )


async def test_delay_and_chunk_delay_are_honoured() -> None:
    model = ScriptedChatModel([{"content": "a b c", "delay": 0.1, "chunk_delay": 0.05}])

    started = time.perf_counter()
    chunks = [chunk.content async for chunk in model.astream("go")]

    assert chunks == ["a ", "b ", "c", ""]
    assert time.perf_counter() - started >= 0.1 + 3 * 0.05 * 0.9


def test_bind_tools_records_every_kind_of_tool() -> None:
    def search(query: str) -> str:
        """Search the web."""
        return query

    schema = {
        "type": "function",
        "function": {"name": "lookup", "description": "Look up.", "parameters": {}},
    }
    model = ScriptedChatModel(["ok"])

    bound = model.bind_tools([add, search, schema])

    assert (bound is model, model.bound_tool_names) == (True, ["add", "search", "lookup"])


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([], "ScriptedChatModel needs at least one turn"),
        ([{"delay": "soon"}], "turns[0].delay: must be a number of seconds"),
        ([3], "turns[0]: must be an object or a string"),
    ],
)
def test_invalid_turns_are_rejected(turns: list[Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        ScriptedChatModel(turns)

    assert str(raised.value) == message
    assert isinstance(raised.value, ScriptError) == bool(turns)
