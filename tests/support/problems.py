"""The error body every failed request gets: ``{"detail", "code", "retryable"}``."""

from __future__ import annotations

from typing import Any

ERROR_KEYS = ["detail", "code", "retryable"]


def problem(detail: Any, code: str, *, retryable: bool = False) -> dict[str, Any]:
    """The whole error body for ``detail`` (a string, or a matcher) and ``code``."""
    return {"detail": detail, "code": code, "retryable": retryable}
