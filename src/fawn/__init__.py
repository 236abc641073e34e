"""fawn: a self-hosted agent runtime.

``fawn.embedded(config="config.yaml")`` opens the LangGraph SDK client served in-process (see
`fawn.client.embedded`). It is loaded on first use, so importing a small part of fawn (its
config, say) does not import the whole application.
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
    raise AttributeError(f"module 'fawn' has no attribute {name!r}")
