"""The thread-centric streaming protocol (``@langchain/protocol``), as ``client.threads.stream``
of the JS SDK speaks it over HTTP: commands answered as JSON, events as SSE.

A run's stream (LangGraph stream modes) is translated into the protocol's channels:

- ``lifecycle``: ``running`` when a run starts, then ``completed``, ``interrupted`` or
  ``failed`` (with the error) when it ends;
- ``values``, ``updates`` (one event per node), ``custom``, ``tasks``, ``checkpoints`` (the
  lightweight envelope: id, parent, step, source);
- ``messages``: the model's streamed message as content blocks (``message-start``,
  ``content-block-start``/``-delta``/``-finish`` for text and tool calls, ``message-finish``
  with usage);
- ``tools``: each tool call's ``tool-started`` and ``tool-finished``/``tool-error``, from the
  tool node's update (fawn's tools do not stream their output);
- ``input``: ``input.requested`` for each interrupt a run stops at.

Every event is in the root namespace (``[]``): fawn's graph has no subgraphs on the wire.
``seq`` orders events across a thread's runs (the run's position on the thread, the event's
id in the run's stream, and its index among the protocol events made from it), so ``since``
resumes after any of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from fawn.agent.serialize import to_jsonable
from fawn.runs.outcome import RunEnded
from fawn.streams.events import StreamEvent, StreamGap

#: The channels an event stream may ask for (``custom:<name>`` picks one custom name).
CHANNELS: Final = (
    "values",
    "updates",
    "messages",
    "tools",
    "lifecycle",
    "input",
    "checkpoints",
    "tasks",
    "custom",
)
#: The LangGraph stream modes a protocol run streams, so every channel has its events.
RUN_MODES: Final = ["values", "updates", "messages-tuple", "custom", "checkpoints", "tasks"]
GRAPH_NAME: Final = "lead_agent"

_RUN_BITS: Final = 32
_EVENT_BITS: Final = 8
_MAX_EVENT_ID: Final = (1 << (_RUN_BITS - _EVENT_BITS)) - 1
_MAX_PART: Final = (1 << _EVENT_BITS) - 1
#: the run stream events whose data the translation reads (the others pass through encoded)
_INSPECTED: Final = frozenset({"error", "end", "updates", "messages", "checkpoints"})
_END_STATUS: Final = {
    "success": "completed",
    "interrupted": "interrupted",
    "error": "failed",
    "timeout": "failed",
    "deleted": "failed",
}


def sequence(run_seq: int, event_id: int, part: int) -> int:
    """An event's ``seq``: after every event of earlier runs and earlier stream events."""
    return (run_seq << _RUN_BITS) | (min(event_id, _MAX_EVENT_ID) << _EVENT_BITS) | part


def split_sequence(seq: int) -> tuple[int, int, int]:
    """``(run seq, stream event id, part)`` of a ``seq``."""
    return (
        seq >> _RUN_BITS,
        (seq >> _EVENT_BITS) & _MAX_EVENT_ID,
        seq & _MAX_PART,
    )


@dataclass(frozen=True, kw_only=True)
class StreamFilter:
    """What one event stream asked for: channels, namespace prefixes, depth."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    def wants(self, event: Mapping[str, Any]) -> bool:
        channel = channel_of(event)
        named = f"custom:{event['params']['data'].get('name')}" if channel == "custom" else None
        if channel not in self.channels and named not in self.channels:
            return False
        namespace = tuple(event["params"]["namespace"])
        if self.namespaces is None:
            return self.depth is None or len(namespace) <= self.depth
        return any(
            namespace[: len(prefix)] == prefix
            and (self.depth is None or len(namespace) - len(prefix) <= self.depth)
            for prefix in self.namespaces
        )


def channel_of(event: Mapping[str, Any]) -> str:
    method = str(event["method"])
    return "input" if method.startswith("input.") else method


@dataclass
class _Message:
    """One AI message being streamed: its blocks so far (the last one may be open)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    open: bool = False
    usage: Any = None
    tool_chunks: dict[Any, int] = field(default_factory=dict)


class ProtocolTranslator:
    """One event stream's translation of run stream items (it keeps the messages being
    streamed, and the tool calls the model asked for, to name tools when they finish)."""

    def __init__(self, clock_ms: Any) -> None:
        self._now = clock_ms
        self._messages: dict[str, _Message] = {}
        self._tool_calls: dict[str, dict[str, Any]] = {}
        self._failure: dict[str, str] = {}

    def translate(self, run_id: str, item: StreamEvent | StreamGap | RunEnded) -> list[Any]:
        """The protocol events' data for one item, as ``(method, data)`` pairs."""
        if isinstance(item, StreamGap):
            return []
        if isinstance(item, RunEnded):
            error = item.error.message if item.error is not None else None
            return [*self._close_messages(), _lifecycle(item.status, error)]
        return list(self._event(run_id, item.event, item.data))

    def envelope(
        self, method: str, data: Any, *, seq: int, event_id: str, node: str | None = None
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"namespace": [], "timestamp": self._now(), "data": data}
        if node is not None:
            params["node"] = node
        return {
            "type": "event",
            "method": method,
            "params": params,
            "event_id": event_id,
            "seq": seq,
        }

    def _event(self, run_id: str, name: str, data: Any) -> Iterator[tuple[str, Any]]:
        if "|" in name:  # a subgraph's event: fawn sends none on this protocol
            return
        if name in _INSPECTED:  # events are kept encoded: these are read here
            data = to_jsonable(data)
        if name == "metadata":
            self._failure.pop(run_id, None)
            yield "lifecycle", {"event": "running", "graph_name": GRAPH_NAME}
        elif name == "error":
            self._failure[run_id] = str((data or {}).get("message") or "run failed")
        elif name == "end":
            status = str((data or {}).get("status"))
            yield from self._close_messages()
            yield _lifecycle(status, self._failure.pop(run_id, None))
        elif name == "values":
            yield "values", data
        elif name == "updates":
            yield from self._updates(data)
        elif name == "messages":
            yield from self._message(data)
        elif name == "custom":
            yield "custom", {"payload": data}
        elif name == "tasks":
            yield "tasks", data
        elif name == "checkpoints":
            yield "checkpoints", _checkpoint(data)

    def _updates(self, data: Any) -> Iterator[tuple[str, Any]]:
        if not isinstance(data, Mapping):
            return
        for node, update in data.items():
            if node == "__interrupt__":
                for interrupt in update or []:
                    payload = {
                        "interrupt_id": interrupt.get("id"),
                        "payload": interrupt.get("value"),
                    }
                    yield "input.requested", payload
                continue
            for one in update if isinstance(update, list) else [update]:
                yield "updates", {"node": node, "values": one if isinstance(one, Mapping) else {}}
                yield from self._tools(one)

    def _tools(self, update: Any) -> Iterator[tuple[str, Any]]:
        """Tool calls asked for (remembered) and tool results (reported)."""
        messages = update.get("messages") if isinstance(update, Mapping) else None
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, Mapping):
                continue
            for call in message.get("tool_calls") or []:
                if isinstance(call, Mapping) and call.get("id"):
                    self._tool_calls[str(call["id"])] = dict(call)
            if message.get("type") != "tool":
                continue
            call_id = str(message.get("tool_call_id") or "")
            call = self._tool_calls.pop(call_id, {})
            yield (
                "tools",
                {
                    "event": "tool-started",
                    "tool_call_id": call_id,
                    "tool_name": call.get("name") or message.get("name") or "",
                    "input": call.get("args", {}),
                },
            )
            if message.get("status") == "error":
                finished = {"event": "tool-error", "tool_call_id": call_id}
                yield "tools", {**finished, "message": _text(message.get("content"))}
            else:
                finished = {"event": "tool-finished", "tool_call_id": call_id}
                yield "tools", {**finished, "output": message.get("content")}

    def _message(self, data: Any) -> Iterator[tuple[str, Any]]:
        chunk, metadata = data if isinstance(data, Sequence) and len(data) == 2 else (None, {})
        if not isinstance(chunk, Mapping) or not isinstance(metadata, Mapping):
            return
        # the lead agent's own model only (not the title's, nor a sub-agent's)
        if metadata.get("langgraph_node") != "model" or "|" in str(
            metadata.get("langgraph_checkpoint_ns", "")
        ):
            return
        if chunk.get("type") not in ("AIMessageChunk", "ai"):
            return
        msg_id = str(chunk.get("id") or "")
        message = self._messages.get(msg_id)
        if message is None:
            message = self._messages[msg_id] = _Message()
            start = {"event": "message-start", "role": "ai", "id": msg_id}
            yield "messages", {**start, "metadata": _message_metadata(chunk, metadata)}
        if chunk.get("usage_metadata"):  # it comes in its own chunk, before the last
            message.usage = chunk["usage_metadata"]
        text = _text(chunk.get("content"))
        if text:
            yield from self._append(message, "text", None, text)
        for call in chunk.get("tool_call_chunks") or []:
            yield from self._append(message, "tool_call_chunk", call, call.get("args") or "")
        if chunk.get("type") == "ai":  # a whole message: its tool calls, then its end
            for call in chunk.get("tool_calls") or []:
                yield from self._append(message, "tool_call_chunk", call, json.dumps(call["args"]))
        if chunk.get("type") == "ai" or chunk.get("chunk_position") == "last":
            yield from self._finish(msg_id)

    def _append(
        self, message: _Message, kind: str, call: Any, delta: str
    ) -> Iterator[tuple[str, Any]]:
        key = (call or {}).get("index", (call or {}).get("id")) if call is not None else None
        current = message.blocks[-1] if message.open and message.blocks else None
        same = current is not None and current["type"] == kind
        if same and kind == "tool_call_chunk":
            same = message.tool_chunks.get(key) == len(message.blocks) - 1 or (
                key is None and not (call or {}).get("name")
            )
        if not same:
            yield from self._close_block(message)
            block: dict[str, Any] = {"type": kind, "text": ""}
            if kind == "tool_call_chunk":
                block = {"type": kind, "id": call.get("id"), "name": call.get("name"), "args": ""}
                message.tool_chunks[key] = len(message.blocks)
            message.blocks.append(block)
            message.open = True
            index = len(message.blocks) - 1
            yield (
                "messages",
                {"event": "content-block-start", "index": index, "content": dict(block)},
            )
        index = len(message.blocks) - 1
        block = message.blocks[index]
        if kind == "text":
            block["text"] += delta
            change = {"type": "text-delta", "text": delta}
        else:
            block["args"] += delta
            change = {"type": "tool-call-delta", "args": delta}
        yield "messages", {"event": "content-block-delta", "index": index, "delta": change}

    def _close_block(self, message: _Message) -> Iterator[tuple[str, Any]]:
        if not message.open or not message.blocks:
            return
        message.open = False
        index = len(message.blocks) - 1
        block = message.blocks[index]
        final: dict[str, Any] = {"type": "text", "text": block.get("text", "")}
        if block["type"] == "tool_call_chunk":
            final = {
                "type": "tool_call",
                "id": block["id"],
                "name": block["name"] or "",
                "args": _parsed_args(block["args"]),
            }
        yield "messages", {"event": "content-block-finish", "index": index, "content": final}

    def _finish(self, msg_id: str) -> Iterator[tuple[str, Any]]:
        message = self._messages.pop(msg_id, None)
        if message is None:
            return
        yield from self._close_block(message)
        finished: dict[str, Any] = {"event": "message-finish"}
        if isinstance(message.usage, Mapping):
            finished["usage"] = dict(message.usage)
        yield "messages", finished

    def _close_messages(self) -> Iterator[tuple[str, Any]]:
        for msg_id in list(self._messages):
            yield from self._finish(msg_id)


def _lifecycle(status: str, error: str | None) -> tuple[str, Any]:
    data: dict[str, Any] = {"event": _END_STATUS.get(status, "failed"), "graph_name": GRAPH_NAME}
    if data["event"] == "failed":
        data["error"] = error or f"run ended: {status}"
    return "lifecycle", data


def _checkpoint(data: Any) -> dict[str, Any]:
    data = data if isinstance(data, Mapping) else {}
    conf = (data.get("config") or {}).get("configurable") or {}
    parent = ((data.get("parent_config") or {}).get("configurable") or {}).get("checkpoint_id")
    metadata = data.get("metadata") or {}
    envelope: dict[str, Any] = {
        "id": conf.get("checkpoint_id"),
        "step": metadata.get("step", 0),
        "source": metadata.get("source", "loop"),
    }
    if parent:
        envelope["parent_id"] = parent
    return envelope


def _message_metadata(chunk: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Concise scalars only (the protocol's ``MessageMetadata``)."""
    response = chunk.get("response_metadata") or {}
    found = {
        "provider": metadata.get("ls_provider") or response.get("model_provider"),
        "model": metadata.get("ls_model_name") or response.get("model_name"),
        "model_type": metadata.get("ls_model_type"),
        "run_id": metadata.get("run_id"),
        "thread_id": metadata.get("thread_id"),
    }
    return {k: v for k, v in found.items() if isinstance(v, str)}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
            if not isinstance(part, Mapping) or part.get("type") in (None, "text")
        )
    return ""


def _parsed_args(raw: str) -> Any:
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
