"""The one place where errors become HTTP status codes. Bodies are ``{"detail": message}``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from fawn.agent.errors import AgentError, NoModelConfigured, UnknownModel
from fawn.gateway.responses import JSON
from fawn.runs.errors import BadRequest, Conflict, InvalidInput, NotFound, ServiceError
from fawn.sandbox.errors import (
    ForbiddenPath,
    InvalidFilename,
    NoSuchFile,
    SandboxError,
    TooManyFiles,
    UnsafeUploadTarget,
    UploadTooLarge,
)
from fawn.store.errors import StoreError, ThreadExists, ThreadNotFound
from fawn.streams.events import StreamError

log = logging.getLogger(__name__)

_STATUS: list[tuple[type[Exception], int]] = [
    (NotFound, 404),
    (ThreadNotFound, 404),
    (Conflict, 409),
    (ThreadExists, 409),
    (InvalidInput, 422),
    (BadRequest, 400),
    (UnknownModel, 400),
    (NoModelConfigured, 400),
    (StreamError, 400),
    (NoSuchFile, 404),
    (ForbiddenPath, 403),
    (UploadTooLarge, 413),
    (TooManyFiles, 413),
    (UnsafeUploadTarget, 409),
    (InvalidFilename, 422),
    (SandboxError, 400),
]


_FASTAPI_UNPARSABLE_BODY = "There was an error parsing the body"


def status_for(exc: Exception) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def _loc(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def validation_message(exc: RequestValidationError) -> str:
    messages = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            messages.append(f"invalid JSON body: {err.get('msg')}")
        elif err.get("type") == "extra_forbidden":
            messages.append(f"{_loc(err['loc'])}: unsupported field")
        elif err.get("type") == "missing" and tuple(err.get("loc", ())) == ("body",):
            messages.append("request body is required")
        else:
            messages.append(f"{_loc(err['loc'])}: {err.get('msg')}")
    return "; ".join(messages) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    async def on_validation(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return JSON({"detail": validation_message(exc)}, status_code=422)

    async def on_service(_: Request, exc: Exception) -> Response:
        status = status_for(exc)
        if status == 500:
            log.exception("unexpected error", exc_info=exc)
            return JSON({"detail": "internal error"}, status_code=500)
        return JSON({"detail": str(exc)}, status_code=status)

    async def on_http(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and exc.detail == _FASTAPI_UNPARSABLE_BODY:
            # FastAPI's answer when the JSON decoder itself fails (e.g. nesting too deep for
            # it): a malformed body like any other, so 422 as for invalid JSON
            return JSON({"detail": "invalid JSON body: it could not be parsed"}, status_code=422)
        return JSON({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    for cls in (ServiceError, StoreError, AgentError, StreamError, SandboxError):
        app.add_exception_handler(cls, on_service)
