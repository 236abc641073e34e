"""Service errors, the one tree the gateway maps to HTTP status codes."""

from __future__ import annotations


class ServiceError(Exception):
    code = "service_error"
    retryable = False


class NotFound(ServiceError):
    code = "not_found"


class Conflict(ServiceError):
    """The request conflicts with the current state (an existing id, a busy thread)."""

    code = "conflict"

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class InvalidInput(ServiceError):
    """A request that is well-formed JSON but asks for something we cannot do (422)."""

    code = "invalid_input"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class BadRequest(ServiceError):
    """A request naming something that does not exist in the server's configuration (400)."""

    code = "bad_request"


class Draining(ServiceError):
    """This worker is shutting down and admits no new runs; another worker (or this one,
    restarted) will. Retryable."""

    code = "draining"
    retryable = True


class NotSupported(ServiceError):
    """A capability fawn does not have (DeerFlow's memory writes, skills, custom agents):
    refused as not found, saying which and why, never answered with a fake success."""

    code = "not_supported"


class ModelCallFailed(ServiceError):
    """A model call the server made outside any run (polishing a draft) failed or answered
    nothing usable (502). Retryable."""

    code = "model_call_failed"
    retryable = True
