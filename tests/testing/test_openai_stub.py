"""The OpenAI stub driven through the real provider client and through raw HTTP."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from fawn.testing import ScriptError
from tests.support.openai_stub import OpenAIStub
from tests.support.registry import ScriptRegistry

Chat = Callable[..., ChatOpenAI]


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return command


async def _stream(
    model: Runnable[Any, Any], prompt: Any
) -> tuple[list[AIMessageChunk], AIMessageChunk]:
    chunks = [chunk async for chunk in model.astream(prompt)]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    return chunks, merged


def _sse_events(body: str) -> list[Any]:
    frames = [frame for frame in body.split("\n\n") if frame]
    assert all(frame.startswith("data: ") for frame in frames), frames
    return [frame.removeprefix("data: ") for frame in frames]


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
        "input_token_details": {},
        "output_token_details": {},
    }


async def test_invoke_returns_scripted_content_and_usage(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    stub.add_script(key, [{"content": "Hello from the stub"}])

    message = await chat().ainvoke(f"{key} say hello")

    assert isinstance(message, AIMessage)
    assert (
        message.content,
        message.tool_calls,
        message.usage_metadata,
        message.response_metadata["finish_reason"],
        message.response_metadata["model_name"],
    ) == ("Hello from the stub", [], _usage(3, 4), "stop", "stub")


async def test_astream_yields_the_content_word_by_word(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    stub.add_script(key, [{"content": "one two  three\nfour"}])

    chunks, merged = await _stream(chat(), f"{key} count")

    assert [chunk.content for chunk in chunks if chunk.content] == [
        "one ",
        "two  ",
        "three\n",
        "four",
    ]
    assert (merged.content, merged.usage_metadata) == ("one two  three\nfour", _usage(2, 4))


async def test_raw_stream_has_openai_chunk_format(
    stub: OpenAIStub, http: httpx.AsyncClient, key: str
) -> None:
    stub.add_script(
        key,
        [
            {
                "content": "Let me look.",
                "tool_calls": [{"name": "bash", "args": {"command": "ls -la"}, "id": "call_x"}],
            }
        ],
    )
    request = {
        "model": "gpt-stub",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": f"{key} list files"},
        ],
    }

    response = await http.post("/v1/chat/completions", json=request)

    assert (response.status_code, response.headers["content-type"]) == (
        200,
        "text/event-stream; charset=utf-8",
    )
    *events, done = _sse_events(response.text)
    chunks = [json.loads(event) for event in events]
    first = chunks[0]

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
        return {
            "id": first["id"],
            "object": "chat.completion.chunk",
            "created": first["created"],
            "model": "gpt-stub",
            "choices": [] if delta is None else choices,
            "usage": None,
        }

    def arguments(fragment: str) -> dict[str, Any]:
        return {"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}

    usage_chunk = chunk(None) | {
        "usage": {"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}
    }
    header = {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "bash", "arguments": ""},
    }
    assert done == "[DONE]"
    assert first["id"].startswith("chatcmpl-")
    assert chunks == [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Let "}),
        chunk({"content": "me "}),
        chunk({"content": "look."}),
        chunk({"tool_calls": [header]}),
        chunk(arguments('{"command":"')),
        chunk(arguments('ls -la"}')),
        chunk({}, "tool_calls"),
        usage_chunk,
    ]


async def test_raw_stream_of_a_tool_call_only_turn_puts_the_role_on_the_call(
    stub: OpenAIStub, http: httpx.AsyncClient, key: str
) -> None:
    stub.add_script(key, [{"tool_calls": [{"name": "noop", "id": "call_n"}]}])
    request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": key}]}

    response = await http.post("/chat/completions", json=request)

    chunks = [json.loads(event) for event in _sse_events(response.text)[:-1]]
    deltas = [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in chunks]
    header = {"index": 0, "id": "call_n", "type": "function"}
    assert deltas == [
        (
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [header | {"function": {"name": "noop", "arguments": ""}}],
            },
            None,
        ),
        ({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, None),
        ({}, "tool_calls"),
    ]
    assert all("usage" not in c for c in chunks)


async def test_raw_completion_has_openai_format(
    stub: OpenAIStub, http: httpx.AsyncClient, key: str
) -> None:
    stub.add_script(key, [{"tool_calls": [{"name": "bash", "args": {"command": "pwd"}}]}])
    request = {"model": "gpt-stub", "messages": [{"role": "user", "content": f"{key} where"}]}

    response = await http.post("/v1/chat/completions", json=request)

    body = response.json()
    assert response.status_code == 200
    assert body == {
        "id": body["id"],
        "object": "chat.completion",
        "created": body["created"],
        "model": "gpt-stub",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "tool_calls": [
                        {
                            "id": "call_0_0",
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"command":"pwd"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4},
    }
    assert abs(body["created"] - time.time()) < 60


@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_tool_calls_reach_the_provider_client(
    stub: OpenAIStub, chat: Chat, key: str, streaming: bool
) -> None:
    stub.add_script(
        key,
        [
            {
                "content": "Running two commands.",
                "tool_calls": [
                    {"name": "bash", "args": {"command": "ls", "cwd": "/tmp/a b"}, "id": "call_a"},
                    {"name": "bash", "args": {"command": "echo 'hi, there'"}},
                ],
            }
        ],
    )
    model = chat().bind_tools([bash])
    prompt = f"{key} run things"

    message: AIMessage
    if streaming:
        _, message = await _stream(model, prompt)
    else:
        message = await model.ainvoke(prompt)

    assert isinstance(message, AIMessage)
    assert (message.content, message.tool_calls, message.invalid_tool_calls) == (
        "Running two commands.",
        [
            {
                "name": "bash",
                "args": {"command": "ls", "cwd": "/tmp/a b"},
                "id": "call_a",
                "type": "tool_call",
            },
            {
                "name": "bash",
                "args": {"command": "echo 'hi, there'"},
                "id": "call_0_1",
                "type": "tool_call",
            },
        ],
        [],
    )
    assert message.response_metadata["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("script", "answered"),
    [
        ([{"content": "first"}, {"content": "second"}], ["first", "second", "second", "second"]),
        (
            [{"content": "first"}, {"tool_calls": [{"name": "bash"}]}],
            ["first", "", "done", "done"],
        ),
    ],
    ids=["past-end-repeats-content", "past-end-after-tools-is-done"],
)
async def test_turn_is_chosen_by_the_number_of_assistant_messages(
    stub: OpenAIStub, chat: Chat, key: str, script: list[Any], answered: list[str]
) -> None:
    stub.add_script(key, script)
    model = chat()
    replies: list[str | list[Any]] = []
    for assistant_turns in range(4):
        history: list[Any] = [SystemMessage("system"), HumanMessage(f"{key} go")]
        for turn in range(assistant_turns):
            history += [AIMessage(f"earlier {turn}"), HumanMessage("and then?")]
        replies.append((await model.ainvoke(history)).content)

    assert replies == answered


async def test_tool_results_count_as_part_of_the_conversation(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    stub.add_script(
        key,
        [{"tool_calls": [{"name": "bash", "args": {"command": "ls"}}]}, {"content": "Two files."}],
    )
    model = chat().bind_tools([bash])
    first = await model.ainvoke([HumanMessage(f"{key} what is here")])

    second = await model.ainvoke(
        [
            HumanMessage(f"{key} what is here"),
            first,
            LCToolMessage("a.txt b.txt", tool_call_id="call_0_0"),
        ]
    )

    assert second.content == "Two files."
    sent = stub.requests_for(key)[1]["messages"]
    assert sent[1:] == [
        {
            "content": None,
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_0_0",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"content": "a.txt b.txt", "role": "tool", "tool_call_id": "call_0_0"},
    ]


@pytest.mark.parametrize(
    ("status", "error_class", "error_type"),
    [
        (500, openai.InternalServerError, "server_error"),
        (429, openai.RateLimitError, "rate_limit_error"),
        (400, openai.BadRequestError, "invalid_request_error"),
    ],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
async def test_error_turns_raise_the_openai_error(
    stub: OpenAIStub,
    chat: Chat,
    key: str,
    status: int,
    error_class: type[openai.APIStatusError],
    error_type: str,
    streaming: bool,
) -> None:
    stub.add_script(key, [{"error": {"status": status, "message": "boom"}}])
    model = chat()

    with pytest.raises(error_class) as raised:
        if streaming:
            await _stream(model, f"{key} fail")
        else:
            await model.ainvoke(f"{key} fail")

    assert (raised.value.status_code, raised.value.body) == (
        status,
        {"message": "boom", "type": error_type, "param": None, "code": None},
    )


async def test_delay_holds_back_the_answer(stub: OpenAIStub, chat: Chat, key: str) -> None:
    stub.add_script(key, [{"content": "late", "delay": 0.3}])

    started = time.perf_counter()
    message = await chat().ainvoke(f"{key} wait")

    assert (message.content, time.perf_counter() - started >= 0.3) == ("late", True)


async def test_chunk_delay_paces_the_stream(stub: OpenAIStub, chat: Chat, key: str) -> None:
    stub.add_script(key, [{"content": "a b c d e f", "chunk_delay": 0.05}])
    arrivals: list[tuple[str, float]] = []

    async for chunk in chat().astream(f"{key} slowly"):
        if chunk.content:
            arrivals.append((str(chunk.content), time.perf_counter()))

    assert [text for text, _ in arrivals] == ["a ", "b ", "c ", "d ", "e ", "f"]
    # Five gaps between six words; the first word arrives long before the last.
    assert arrivals[-1][1] - arrivals[0][1] >= 5 * 0.05 * 0.9


async def test_a_script_title_answers_title_requests(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    stub.add_script(key, [{"content": "Sure, here is the plan."}], title="Weekend Plans")
    title_prompt = [
        SystemMessage("Write a short title for this conversation."),
        HumanMessage(f"{key} plan my weekend"),
    ]

    title = await chat().ainvoke(title_prompt)
    # With tools bound the same words are an ordinary conversation turn.
    with_tools = await chat().bind_tools([bash]).ainvoke(title_prompt)
    # Without the word "title" it is an ordinary turn too.
    plain = await chat().ainvoke(f"{key} plan my weekend")

    assert (title.content, with_tools.content, plain.content) == (
        "Weekend Plans",
        "Sure, here is the plan.",
        "Sure, here is the plan.",
    )


async def test_unmatched_requests_get_default_answers(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    reply = await chat().ainvoke(f"{key} nobody scripted this")
    title = await chat().ainvoke(f"{key} give this chat a TITLE")
    with_tools = await chat().bind_tools([bash]).ainvoke(f"{key} give this chat a title")

    assert (reply.content, title.content, with_tools.content) == (
        "stub reply",
        "Stub Title",
        "stub reply",
    )
    unmatched = [
        body["messages"][0]["content"]
        for body in stub.requests_for(None)
        if key in body["messages"][0]["content"]
    ]
    assert unmatched == [
        f"{key} nobody scripted this",
        f"{key} give this chat a TITLE",
        f"{key} give this chat a title",
    ]


async def test_matching_uses_the_first_user_message_and_its_text_parts(
    stub: OpenAIStub, chat: Chat, key: str
) -> None:
    stub.add_script(key, [{"content": "matched"}])
    stub.add_script(f"{key}-longer", [{"content": "longer key wins"}])
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}

    parts = await chat().ainvoke(
        [HumanMessage([image, {"type": "text", "text": f"see {key} upload"}])]
    )
    later_only = await chat().ainvoke([HumanMessage("hello"), HumanMessage(key)])
    longest = await chat().ainvoke(f"{key}-longer please")

    assert (parts.content, later_only.content, longest.content) == (
        "matched",
        "stub reply",
        "longer key wins",
    )


async def test_requests_are_recorded_per_key(
    stub: OpenAIStub, chat: Chat, http: httpx.AsyncClient, key: str
) -> None:
    stub.add_script(key, [{"content": "ok"}])

    await chat().bind_tools([bash]).ainvoke(f"{key} record me")
    over_http = (await http.get("/_stub/requests", params={"key": key})).json()

    assert over_http == stub.requests_for(key)
    assert over_http == [
        {
            "messages": [{"content": f"{key} record me", "role": "user"}],
            "model": "stub",
            "stream": False,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "bash",
                        "description": "Run a shell command.",
                        "parameters": {
                            "properties": {"command": {"type": "string"}},
                            "required": ["command"],
                            "type": "object",
                        },
                    },
                }
            ],
        }
    ]


async def test_request_log_is_bounded() -> None:
    registry = ScriptRegistry(max_requests_per_key=3)
    async with OpenAIStub(registry) as small, httpx.AsyncClient(base_url=small.base_url) as client:
        small.add_script("bounded", ["ok"])
        for n in range(5):
            body = {"model": "m", "messages": [{"role": "user", "content": f"bounded {n}"}]}
            assert (await client.post("/chat/completions", json=body)).status_code == 200

        log = small.requests_for("bounded")

    assert [body["messages"][0]["content"] for body in log] == [
        "bounded 2",
        "bounded 3",
        "bounded 4",
    ]


async def test_scripts_can_be_managed_over_http(
    http: httpx.AsyncClient, chat: Chat, key: str
) -> None:
    script = {"key": key, "turns": [{"content": "from http"}], "title": "T"}

    added = await http.post("/_stub/scripts", json=script)
    answered = await chat().ainvoke(f"{key} hi")
    deleted = await http.delete(f"/_stub/scripts/{key}")
    deleted_again = await http.delete(f"/_stub/scripts/{key}")
    after = await chat().ainvoke(f"{key} hi")

    assert [
        (added.status_code, added.json()),
        answered.content,
        (deleted.status_code, deleted.json()),
        deleted_again.json(),
        after.content,
    ] == [
        (200, {"key": key, "turns": 1, "title": "T"}),
        "from http",
        (200, {"key": key, "deleted": True}),
        {"key": key, "deleted": False},
        "stub reply",
    ]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"key": "k", "turns": []}, "turns: must be a non-empty list"),
        ({"key": "k", "turns": [{"content": 3}]}, "turns[0].content: must be a string"),
        ({"key": "k", "turns": [{"delay": -1}]}, "turns[0].delay: must be a finite number >= 0"),
        ({"key": "k", "turns": [{"contnet": "x"}]}, "turns[0]: unknown fields ['contnet']"),
        (
            {"key": "k", "turns": [{"tool_calls": [{"args": {}}]}]},
            "turns[0].tool_calls[0].name: must be a non-empty string",
        ),
        (
            {"key": "k", "turns": [{"error": {"status": 200}}]},
            "turns[0].error.status: must be an HTTP error status (400-599)",
        ),
        ({"turns": ["x"]}, "'key' must be a string and 'turns' a list"),
        ({"key": "k", "turns": ["x"], "title": 1}, "'title' must be a string"),
        ([], "body must be a JSON object"),
    ],
)
async def test_invalid_scripts_are_rejected(
    http: httpx.AsyncClient, script: Any, message: str
) -> None:
    response = await http.post("/_stub/scripts", json=script)

    assert (response.status_code, response.json()) == (
        400,
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b'{"model": "m"}', "'messages' must be a non-empty array"),
        (b'{"messages": [1]}', "each message must be an object"),
    ],
)
async def test_malformed_chat_requests_get_400(
    http: httpx.AsyncClient, body: bytes, message: str
) -> None:
    response = await http.post("/v1/chat/completions", content=body)

    assert (response.status_code, response.json()["error"]["message"]) == (400, message)


async def test_models_are_listed(stub: OpenAIStub) -> None:
    async with openai.AsyncOpenAI(api_key="x", base_url=stub.base_url) as client:
        models = await client.models.list()

    assert [(model.id, model.owned_by) for model in models.data] == [("stub", "fawn")]


async def test_stop_is_prompt_when_clients_hang_up_on_slow_answers() -> None:
    async with OpenAIStub() as private:
        private.add_script("slow", [{"content": "never", "delay": 30}])
        private.add_script("drip", [{"content": "word " * 50, "chunk_delay": 0.1}])
        model = ChatOpenAI(model="stub", api_key="x", base_url=private.base_url, max_retries=0)

        async def read_a_little() -> None:
            async for _ in model.astream("drip"):
                await asyncio.sleep(0)

        slow = asyncio.create_task(model.ainvoke("slow"))
        drip = asyncio.create_task(read_a_little())
        await asyncio.sleep(0.3)
        for task in (slow, drip):
            task.cancel()
        await asyncio.gather(slow, drip, return_exceptions=True)
        started = time.perf_counter()
    # Leaving the block stopped the server: it noticed the hang-ups instead of waiting
    # out the 30 s delay (or the one-second grace period for in-flight requests).
    assert time.perf_counter() - started < 0.9


async def test_port_2024_is_refused() -> None:
    with pytest.raises(ValueError, match="2024"):
        await OpenAIStub().start(port=2024)


async def test_base_url_needs_a_running_stub() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = OpenAIStub().base_url


async def test_sequential_requests_do_not_stall_on_delayed_acks(
    stub: OpenAIStub, http: httpx.AsyncClient, key: str
) -> None:
    """Without TCP_NODELAY each response waits ~40 ms for the client's delayed ACK."""
    stub.add_script(key, ["quick"])
    body = {"model": "m", "messages": [{"role": "user", "content": key}]}

    started = time.perf_counter()
    statuses = [(await http.post("/v1/chat/completions", json=body)).status_code for _ in range(10)]

    assert (statuses, time.perf_counter() - started < 0.3) == ([200] * 10, True)


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_turn_can_script_its_finish_reason_and_usage(
    stub: OpenAIStub, chat: Chat, key: str, streaming: bool
) -> None:
    stub.add_script(
        key,
        [
            {
                "content": "cut",
                "finish_reason": "length",
                "usage": {"prompt_tokens": 70_000, "completion_tokens": 5},
            }
        ],
    )
    model = chat()

    reply = (await _stream(model, key))[1] if streaming else await model.ainvoke(key)

    assert reply.response_metadata["finish_reason"] == "length"
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (
        70_000,
        5,
    )


@pytest.mark.parametrize(
    ("turn", "problem"),
    [
        ({"finish_reason": ""}, "turns[0].finish_reason: must be a non-empty string"),
        (
            {"usage": {"prompt_tokens": 1}},
            "turns[0].usage: must be {prompt_tokens, completion_tokens}",
        ),
        (
            {"usage": {"prompt_tokens": -1, "completion_tokens": 1}},
            "turns[0].usage: token counts must be integers >= 0",
        ),
    ],
)
def test_bad_finish_reasons_and_usage_are_refused(turn: dict[str, Any], problem: str) -> None:
    with pytest.raises(ScriptError, match=re.escape(problem)):
        ScriptRegistry().add("k", [turn])
