"""Clients of fawn's public API: the embedded (in-process) LangGraph SDK client and helpers
for the application routes (uploads, artifacts) that every surface shares."""

from fawn.client.embedded import embedded

__all__ = ["embedded"]
