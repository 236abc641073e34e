"""Request bodies at the edge: what kind, how big, and (for JSON) whether fawn can keep it.

Every request body is one of two kinds. **JSON** (``application/json`` or ``…+json``) on any
operation of the OpenAPI document: it is read as it arrives, counted against ``server.max_body_bytes`` (a declared
``Content-Length`` above it is refused before a byte is read), decoded once under the rules of
:mod:`fawn.gateway.edge.jsonbody`, and only then handed on to the route, so a route only ever
sees a body that is whole, small enough and storable. **multipart/form-data** only on the
routes that stream uploads (their OpenAPI operation declares it): they enforce their own
per-file and per-request limits as the bytes arrive. **application/x-www-form-urlencoded**
only on the operations that declare it (sign-in, as an HTML form posts it): counted against
the same limit, then handed on. Anything else is a 415: in particular a
``text/plain`` body holding JSON (what a cross-site form can send without a CORS preflight)
never reaches a JSON route. A request for an operation the document does not declare goes
on untouched: the router answers 404 or 405 without reading its body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fawn.gateway.edge.errors import BodyTooLarge, EdgeError, InvalidJsonBody, UnsupportedMediaType
from fawn.gateway.edge.jsonbody import JsonBodyError, decode_json_body
from fawn.gateway.errors import error_response

#: ``multipart`` for the operations that stream a multipart body themselves, ``form`` for those
#: that take an HTML form
BodyKind = Literal["json", "multipart", "form"]
#: ``(method, path) -> kind``, None for a request no operation declares
BodyKinds = Callable[[str, str], BodyKind | None]

_MULTIPART = "multipart/form-data"
_FORM = "application/x-www-form-urlencoded"

#: Bodies above this size are decoded on a worker thread, off the event loop.
_DECODE_INLINE_BYTES = 64 * 1024


def media_type(headers: Headers) -> str | None:
    """``application/json`` for ``Application/JSON; charset=utf-8``; None when absent."""
    raw = headers.get("content-type")
    if raw is None:
        return None
    return raw.split(";", 1)[0].strip().lower()


def is_json(media: str | None) -> bool:
    return media is not None and (
        media == "application/json"
        or (media.startswith("application/") and media.endswith("+json"))
    )


class RequestBodyGuard:
    """Pure ASGI: refuse a body of the wrong kind, too large or unstorable, before routing."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        max_json_depth: int,
        body_kinds: BodyKinds,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_json_depth = max_json_depth
        self.body_kinds = body_kinds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            declared = _declared_length(headers)
            kind = self.body_kinds(scope["method"], scope["path"])
            media = media_type(headers)
            if declared == 0 or kind is None or (kind, media) == ("multipart", _MULTIPART):
                # no body, no such operation, or an upload that enforces its own limits
                await self.app(scope, receive, send)
                return
            form = (kind, media) == ("form", _FORM)
            if not form:
                self._check_kind(media, scope)
            body = await self._read(receive, declared)
            if body is None:  # the client went away mid-body
                return
            if body and not form:
                await self._check_json(body)
        except EdgeError as exc:
            # The server discards whatever of the body is still to come.
            await error_response(exc)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _check_kind(self, media: str | None, scope: Scope) -> None:
        if is_json(media):
            return
        if media is None:
            raise UnsupportedMediaType(
                "the request has a body but no Content-Type: send JSON as application/json"
            )
        if media == "multipart/form-data":
            raise UnsupportedMediaType(
                f"{scope['method']} {scope['path']} does not take multipart/form-data: "
                "send JSON as application/json (files go to POST /api/threads/{id}/uploads)"
            )
        raise UnsupportedMediaType(
            f"unsupported Content-Type {media}: request bodies are JSON (application/json)"
        )

    def _too_large(self) -> BodyTooLarge:
        return BodyTooLarge(
            f"the request body exceeds the limit of {self.max_body_bytes} bytes "
            "(server.max_body_bytes)"
        )

    async def _read(self, receive: Receive, declared: int | None) -> bytes | None:
        """The whole body, counted as it arrives; None when the client disconnected."""
        if declared is not None and declared > self.max_body_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _check_json(self, body: bytes) -> None:
        try:
            if len(body) <= _DECODE_INLINE_BYTES:
                decode_json_body(body, max_depth=self.max_json_depth)
            else:
                await anyio.to_thread.run_sync(
                    lambda: decode_json_body(body, max_depth=self.max_json_depth)
                )
        except JsonBodyError as exc:
            raise InvalidJsonBody(str(exc)) from None


def _declared_length(headers: Headers) -> int | None:
    """The declared ``Content-Length``; None when the body is chunked (length unknown)."""
    raw = headers.get("content-length")
    if raw is None:
        return None if "transfer-encoding" in headers else 0
    try:
        return int(raw)
    except ValueError:
        raise EdgeError(f"invalid Content-Length {raw[:40]!r}") from None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the already read body once, then the client's own events."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
