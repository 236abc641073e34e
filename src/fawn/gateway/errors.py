"""The one place where errors become HTTP responses.

Every subsystem raises errors from its own tree, each class carrying a ``code`` (what went
wrong, stable for programs) and ``retryable`` (whether the same request may succeed later).
:data:`STATUS_BY_CODE` maps codes to HTTP statuses; a class whose code is not listed takes the
status of the nearest base class whose code is. Bodies are
``{"detail": message, "code": code, "retryable": bool}`` (LangGraph's ``detail`` plus the two
fields a program can act on); retryable infrastructure errors (503) also carry ``Retry-After``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from fawn.agent.errors import AgentError
from fawn.gateway.auth.errors import AuthError
from fawn.gateway.openapi import allowed_methods, operations
from fawn.gateway.responses import JSON
from fawn.runs.errors import ServiceError
from fawn.sandbox.errors import SandboxError
from fawn.store.database import DRIVER_ERRORS, unavailable_error
from fawn.store.errors import StoreError
from fawn.streams.events import StreamError

log = logging.getLogger(__name__)

#: code → HTTP status. The only table of its kind: add a code here when you add an error class.
STATUS_BY_CODE: dict[str, int] = {
    # requests that name something missing
    "not_found": 404,
    "thread_not_found": 404,
    "path_not_found": 404,
    "file_not_found": 404,
    "stream_not_found": 404,
    "not_supported": 404,
    "auth_mode_mismatch": 404,
    # conflicts with the current state
    "conflict": 409,
    "thread_exists": 409,
    "run_conflict": 409,
    "unsafe_upload_target": 409,
    "stream_closed": 409,
    "email_already_exists": 409,
    "system_already_initialized": 409,
    # malformed or impossible requests
    "invalid_input": 422,
    "invalid_filename": 422,
    "invalid_thread_id": 422,
    "invalid_cursor": 400,
    "unstorable_value": 422,
    "bad_request": 400,
    "host_not_allowed": 400,
    "unknown_model": 400,
    "no_model_configured": 400,
    "model_load_error": 400,
    "agent_error": 400,
    "sandbox_error": 400,
    "path_outside_sandbox": 403,
    "forbidden_path": 403,
    "read_only_path": 403,
    "cross_site_request": 403,
    "unsupported_media_type": 415,
    # identity: who is calling, and may they
    "auth_error": 401,
    "not_authenticated": 401,
    "token_invalid": 401,
    "token_expired": 401,
    "invalid_credentials": 401,
    "csrf_failed": 403,
    "forbidden": 403,
    "server_owned_field": 403,
    "registration_disabled": 403,
    "weak_password": 422,
    "invalid_email": 422,
    "user_not_found": 404,
    "too_many_attempts": 429,
    "sso_failed": 502,
    "model_call_failed": 502,
    "auth_handler_error": 500,
    "auth_handler_rejected": 403,
    "model_not_allowed": 403,
    # limits
    "request_too_large": 413,
    "upload_too_large": 413,
    # more parts than the document's maxItems: a refusal of the request's shape, not its size
    "too_many_files": 422,
    # infrastructure, or this worker shutting down: try again later
    "sandbox_unavailable": 503,
    "store_unavailable": 503,
    "draining": 503,
    "stream_unavailable": 503,
    "stream_error": 503,
    "store_error": 503,
    "service_error": 500,
}

#: seconds a client should wait before retrying a 503
RETRY_AFTER_SECONDS = 2

_ROOTS: tuple[type[Exception], ...] = (
    AuthError,
    ServiceError,
    StoreError,
    AgentError,
    StreamError,
    SandboxError,
)

_FASTAPI_UNPARSABLE_BODY = "There was an error parsing the body"

_CODE_BY_HTTP_STATUS = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    416: "range_not_satisfiable",
}


def code_for(exc: BaseException) -> str | None:
    """The code of the nearest class in ``exc``'s hierarchy that the table knows."""
    for cls in type(exc).__mro__:
        code = cls.__dict__.get("code")
        if isinstance(code, str) and code in STATUS_BY_CODE:
            return code
    return None


def status_for(exc: BaseException) -> int:
    code = code_for(exc)
    return 500 if code is None else STATUS_BY_CODE[code]


def error_body(detail: str, code: str, *, retryable: bool = False) -> dict[str, Any]:
    return {"detail": detail, "code": code, "retryable": retryable}


def error_response(exc: BaseException) -> JSON:
    """The response for a subsystem error (500 ``internal_error`` for anything unmapped)."""
    code = code_for(exc)
    if code is None:
        log.error("unexpected error", exc_info=exc)
        return JSON(error_body("internal error", "internal_error"), status_code=500)
    # An error may name its own status (a LangGraph ``Auth`` handler's HTTPException does).
    status = getattr(exc, "status_code", None) or STATUS_BY_CODE[code]
    retryable = bool(getattr(exc, "retryable", False)) or status == 503
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else {}
    headers.update(getattr(exc, "headers", None) or {})
    if status >= 500:
        log.warning("%s: %s", code, exc)
    return JSON(
        error_body(str(exc) or code, code, retryable=retryable),
        status_code=status,
        headers=headers or None,
    )


def _loc(loc: tuple[Any, ...]) -> str:
    """``input.messages[0].role``: keys joined by dots, list indexes in brackets."""
    text = ""
    for index, part in enumerate(loc):
        if index == 0 and part in ("body", "query", "path", "header"):
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "body"


def validation_message(exc: RequestValidationError) -> str:
    messages = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            messages.append(f"body: invalid JSON: {err.get('msg')}")
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
        return JSON(error_body(validation_message(exc), "invalid_input"), status_code=422)

    async def on_service(_: Request, exc: Exception) -> Response:
        return error_response(exc)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and exc.detail == _FASTAPI_UNPARSABLE_BODY:
            # FastAPI's answer when the JSON decoder itself fails (e.g. nesting too deep for
            # it): a malformed body like any other, so 422 as for invalid JSON
            return JSON(
                error_body("body: invalid JSON: it could not be parsed", "invalid_input"),
                status_code=422,
            )
        code = _CODE_BY_HTTP_STATUS.get(exc.status_code, "http_error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            # The router only knows the first route matching the path; the document knows all.
            methods = allowed_methods(operations(request.app.openapi()), request.url.path)
            headers["Allow"] = ", ".join(methods)
        return JSON(error_body(str(exc.detail), code), status_code=exc.status_code, headers=headers)

    async def on_driver(_: Request, exc: Exception) -> Response:
        unavailable = unavailable_error(exc)
        return error_response(exc if unavailable is None else unavailable)

    async def on_unexpected(_: Request, exc: Exception) -> Response:
        # Logged by error_response; the server's own error middleware re-raises it after.
        return error_response(exc)

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_exception_handler(StarletteHTTPException, on_http)
    for cls in _ROOTS:
        app.add_exception_handler(cls, on_service)
    # driver errors that reach the edge untranslated (the checkpointer's, say): an outage
    # among them is ``store_unavailable`` (503), anything else a 500
    for cls in DRIVER_ERRORS:
        app.add_exception_handler(cls, on_driver)
