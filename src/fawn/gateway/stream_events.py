"""What a run's stream says, in the LangGraph server's words: graph chunks, the run's start,
its failure and its end (the lifecycle decides when; this module, the shapes).

Graph chunks become events named as the LangGraph server names them.

``messages-tuple`` is LangGraph's ``messages`` mode sent as ``[message, metadata]``; the API's
own ``messages`` mode accumulates chunks per message id and sends ``messages/metadata`` once,
then ``messages/partial`` with the whole message so far, and ``messages/complete`` for
messages that arrive whole.

``events`` is LangChain's ``astream_events`` (v2): every callback event of the run (model,
tool, chain start/stream/end), each sent as it is; the graph's own stream rides along in the
root's ``on_chain_stream`` events and goes out as the other modes' events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage, BaseMessageChunk

from fawn.agent.serialize import encoded, to_jsonable
from fawn.runs.events import Event
from fawn.runs.outcome import EndStatus, RunError
from fawn.runs.spec import RunSpec


class LangGraphStreamRenderer:
    """The :class:`fawn.runs.events.StreamRenderer` of the LangGraph wire."""

    def graph_modes(self, spec: RunSpec) -> list[str]:
        # ``events`` alone still needs a graph mode to drive the graph: the translator drops it
        return graph_modes(spec.stream_modes) or ["values"]

    def wants_callbacks(self, spec: RunSpec) -> bool:
        return CALLBACK_EVENTS in spec.stream_modes

    def translator(self, spec: RunSpec) -> EventTranslator:
        return EventTranslator(spec.stream_modes, subgraphs=spec.stream_subgraphs)

    def started(self, run_id: str, thread_id: str) -> Event:
        return "metadata", {"run_id": run_id, "thread_id": thread_id, "attempt": 1}

    def failed(self, error: RunError) -> Event:
        return "error", error_json(error)

    def ended(self, run_id: str, status: EndStatus) -> Event:
        return "end", {"run_id": run_id, "status": status}


def error_json(error: RunError) -> dict[str, str]:
    """A run's error as the API sends it (``error`` events, ``__error__`` answers)."""
    return {"error": error.error, "message": error.message}


#: The API stream mode of LangChain's callback events (not a LangGraph stream mode).
CALLBACK_EVENTS = "events"


def graph_modes(requested: Sequence[str]) -> list[str]:
    """The LangGraph stream modes needed to produce the requested API modes."""
    modes: list[str] = []
    for mode in requested:
        if mode == CALLBACK_EVENTS:
            continue
        lg = "messages" if mode in ("messages", "messages-tuple") else mode
        if lg not in modes:
            modes.append(lg)
    return modes


class EventTranslator:
    def __init__(self, requested: Sequence[str], *, subgraphs: bool) -> None:
        self._requested = set(requested)
        self._graph_modes = set(graph_modes(requested))
        self._subgraphs = subgraphs
        self._partial: dict[str, BaseMessageChunk] = {}

    def translate(self, chunk: Any) -> Iterator[tuple[str, Any]]:
        if self._subgraphs:
            namespace, mode, data = chunk
        else:
            namespace, (mode, data) = (), chunk
        if mode not in self._graph_modes:
            return
        suffix = "".join(f"|{part}" for part in namespace)
        if mode == "messages":
            yield from self._messages(data, suffix)
        else:
            yield mode + suffix, _payload(data)

    def translate_callback(self, event: Any) -> Iterator[tuple[str, Any]]:
        if CALLBACK_EVENTS in self._requested:
            yield CALLBACK_EVENTS, _payload(event)

    def _messages(self, data: Any, suffix: str) -> Iterator[tuple[str, Any]]:
        message, metadata = data
        meta = to_jsonable(metadata)
        if "messages-tuple" in self._requested:
            yield "messages" + suffix, [encoded(message), meta]
        if "messages" not in self._requested:
            return
        msg_id = getattr(message, "id", None) or ""
        if isinstance(message, BaseMessageChunk):
            previous = self._partial.get(msg_id)
            if previous is None:
                yield "messages/metadata" + suffix, {msg_id: {"metadata": meta}}
                merged: BaseMessageChunk = message
            else:
                merged = previous + message
            self._partial[msg_id] = merged
            yield "messages/partial" + suffix, [_message_json(merged)]
        elif isinstance(message, BaseMessage):
            if msg_id not in self._partial:
                yield "messages/metadata" + suffix, {msg_id: {"metadata": meta}}
            self._partial.pop(msg_id, None)
            yield "messages/complete" + suffix, [_message_json(message)]


def _payload(data: Any) -> Any:
    """A chunk as JSON, encoded once (interrupts come out as ``{value, id}``, see serialize)."""
    return encoded(data)


def _message_json(message: BaseMessage) -> Any:
    body = to_jsonable(message)
    if isinstance(message, AIMessageChunk) and isinstance(body, dict):
        body["type"] = "ai"
    return body
