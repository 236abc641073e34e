"""The Starlette application behind `tests.support.openai_stub` (rules are documented there)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from fawn.testing.script import ScriptedError, ScriptError
from tests.support.openai_request import (
    DEFAULT_MODEL,
    BadRequest,
    choose_reply,
    read_chat_request,
)
from tests.support.openai_wire import (
    Completion,
    completion_body,
    error_body,
    stream_frames,
)
from tests.support.registry import ScriptRegistry

_JSON = "application/json"
_NOT_JSON = "request body is not valid JSON"
_SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def create_app(registry: ScriptRegistry) -> Starlette:
    """The stub's ASGI app, answering from ``registry``."""
    endpoints = _Endpoints(registry)
    return Starlette(
        routes=[
            Route("/v1/chat/completions", endpoints.chat_completions, methods=["POST"]),
            Route("/chat/completions", endpoints.chat_completions, methods=["POST"]),
            Route("/v1/models", endpoints.models, methods=["GET"]),
            Route("/models", endpoints.models, methods=["GET"]),
            Route("/_stub/scripts", endpoints.add_script, methods=["POST"]),
            Route("/_stub/scripts/{key:path}", endpoints.remove_script, methods=["DELETE"]),
            Route("/_stub/requests", endpoints.requests, methods=["GET"]),
        ]
    )


def _json(content: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(content), status_code=status_code, media_type=_JSON)


def _bad_request(message: str) -> Response:
    return _json(error_body(ScriptedError(status=400, message=message)), 400)


class _Endpoints:
    def __init__(self, registry: ScriptRegistry) -> None:
        self._registry = registry

    async def chat_completions(self, request: Request) -> Response:
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _bad_request(_NOT_JSON)
        try:
            chat = read_chat_request(body)
        except BadRequest as exc:
            return _bad_request(str(exc))
        reply = choose_reply(self._registry, chat)
        self._registry.record(reply.script.key if reply.script else None, body)
        turn = reply.turn
        if turn.delay and not await _wait_unless_disconnected(request, turn.delay):
            return Response(status_code=499)  # Nobody is listening any more.
        if turn.error is not None:
            return _json(error_body(turn.error), turn.error.status)
        completion = Completion(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=chat.model,
            turn=turn,
            turn_index=reply.turn_index,
            prompt_tokens=chat.prompt_tokens,
        )
        if not chat.stream:
            return _json(completion_body(completion))
        frames = stream_frames(completion, include_usage=chat.include_usage)
        if not turn.chunk_delay:
            # One write for the whole stream: the client's SSE parser cannot tell the
            # difference, and the benchmark pays for fewer sends.
            return Response(b"".join(frames), media_type="text/event-stream", headers=_SSE_HEADERS)
        return StreamingResponse(
            _paced(frames, turn.chunk_delay), media_type="text/event-stream", headers=_SSE_HEADERS
        )

    async def models(self, request: Request) -> Response:
        model = {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "fawn"}
        return _json({"object": "list", "data": [model]})

    async def add_script(self, request: Request) -> Response:
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            return _bad_request(_NOT_JSON)
        if not isinstance(body, dict):
            return _bad_request("body must be a JSON object")
        key, turns, title = body.get("key"), body.get("turns"), body.get("title")
        if not isinstance(key, str) or not isinstance(turns, list):
            return _bad_request("'key' must be a string and 'turns' a list")
        if title is not None and not isinstance(title, str):
            return _bad_request("'title' must be a string")
        try:
            script = self._registry.add(key, turns, title=title)
        except ScriptError as exc:
            return _bad_request(str(exc))
        return _json({"key": script.key, "turns": len(script.turns), "title": script.title})

    async def remove_script(self, request: Request) -> Response:
        key: str = request.path_params["key"]
        return _json({"key": key, "deleted": self._registry.remove(key)})

    async def requests(self, request: Request) -> Response:
        return _json(self._registry.requests_for(request.query_params.get("key")))


async def _paced(frames: list[bytes], pause: float) -> AsyncIterator[bytes]:
    for index, frame in enumerate(frames):
        if index:
            await asyncio.sleep(pause)
        yield frame


async def _wait_unless_disconnected(request: Request, seconds: float) -> bool:
    """Sleep ``seconds``; return False early if the client goes away meanwhile.

    The body has been read, so the next ASGI message can only be ``http.disconnect``.
    """
    try:
        async with asyncio.timeout(seconds):
            while (await request.receive())["type"] != "http.disconnect":
                pass
    except TimeoutError:
        return True
    return False
