"""What a run's stream says, in the LangGraph server's words: graph chunks, the run's start,
its failure and its end (the lifecycle decides when; this module, the shapes).

Graph chunks become events named as the LangGraph server names them.

``messages-tuple`` is LangGraph's ``messages`` mode sent as ``[message, metadata]``; the API's
own ``messages`` mode accumulates chunks per message id and sends ``messages/metadata`` once,
then ``messages/partial`` with the whole message so far, and ``messages/complete`` for
messages that arrive whole.
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
        return graph_modes(spec.stream_modes)

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


def graph_modes(requested: Sequence[str]) -> list[str]:
    """The LangGraph stream modes needed to produce the requested API modes."""
    modes: list[str] = []
    for mode in requested:
        lg = "messages" if mode in ("messages", "messages-tuple") else mode
        if lg not in modes:
            modes.append(lg)
    return modes


class EventTranslator:
    def __init__(self, requested: Sequence[str], *, subgraphs: bool) -> None:
        self._requested = set(requested)
        self._subgraphs = subgraphs
        self._partial: dict[str, BaseMessageChunk] = {}

    def translate(self, chunk: Any) -> Iterator[tuple[str, Any]]:
        if self._subgraphs:
            namespace, mode, data = chunk
        else:
            namespace, (mode, data) = (), chunk
        suffix = "".join(f"|{part}" for part in namespace)
        if mode == "messages":
            yield from self._messages(data, suffix)
        else:
            yield mode + suffix, _payload(data)

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
