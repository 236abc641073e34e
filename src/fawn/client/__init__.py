"""Clients of fawn's public API: the embedded (in-process) LangGraph SDK client, and helpers
for the application routes (uploads, artifacts) that every surface shares.

`embedded` is loaded on first use: the helpers do not need the whole application.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fawn.client.embedded import embedded

__all__ = ["embedded"]


def __getattr__(name: str) -> Any:
    if name == "embedded":
        from fawn.client.embedded import embedded

        return embedded
    raise AttributeError(f"module 'fawn.client' has no attribute {name!r}")
