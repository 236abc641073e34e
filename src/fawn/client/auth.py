"""Credentials a client sends: an API key as ``Authorization: Bearer``."""

from __future__ import annotations


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
