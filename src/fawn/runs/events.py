"""The seam between the lifecycle and the wire: what a run's stream says at each moment.

The lifecycle decides *when* something is said (a run started, a graph chunk, a failure, the
end); the gateway, which owns every wire shape, decides *how* (see
``fawn.gateway.stream_events``) and is passed in as a :class:`StreamRenderer`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from fawn.runs.outcome import EndStatus, RunError
from fawn.runs.spec import RunSpec

#: an SSE event name and its JSON-able data
Event = tuple[str, Any]


class ChunkTranslator(Protocol):
    def translate(self, chunk: Any) -> Iterable[Event]:
        """The stream events for one chunk of ``graph.astream``."""
        ...

    def translate_callback(self, event: Any) -> Iterable[Event]:
        """The stream events for one LangChain callback event (``astream_events`` v2) that
        is not a chunk of the graph's own stream (runs that asked for ``events``)."""
        ...


class StreamRenderer(Protocol):
    def graph_modes(self, spec: RunSpec) -> list[str]:
        """The LangGraph stream modes that produce the modes the run asked for."""
        ...

    def wants_callbacks(self, spec: RunSpec) -> bool:
        """Whether the run streams LangChain's callback events (``astream_events``)."""
        ...

    def translator(self, spec: RunSpec) -> ChunkTranslator:
        """A translator for one run's chunks (it may keep state across chunks)."""
        ...

    def started(self, run_id: str, thread_id: str) -> Event: ...

    def failed(self, error: RunError) -> Event: ...

    def ended(self, run_id: str, status: EndStatus) -> Event: ...
